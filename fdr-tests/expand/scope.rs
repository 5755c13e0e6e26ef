"parse_header"
