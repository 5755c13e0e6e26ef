#[instrument_fdr]
pub mod parser {
    use super::Token;

    pub struct Parser {
        pos: usize,
    }

    // Cannot take long: left out.
    pub fn is_digit(b: u8) -> bool {
        b >= b'0' && b <= b'9'
    }

    pub fn parse(input: &str) -> Vec<Token> {
        Parser { pos: 0 }.tokens(input)
    }

    #[instrument_fdr(trigger = "2s")]
    pub fn parse_all(inputs: &[&str]) -> usize {
        inputs.iter().map(|i| parse(i).len()).sum()
    }

    #[instrument_fdr(skip)]
    pub fn hot(input: &str) -> usize {
        input.len()
    }

    impl Parser {
        pub fn pos(&self) -> usize {
            self.pos
        }
        fn tokens(&mut self, input: &str) -> Vec<Token> {
            input.bytes().map(Token::from).collect()
        }
    }

    pub trait Visit {
        fn visit(&mut self, token: &Token) {
            self.enter(token)
        }
        fn enter(&mut self, token: &Token);
    }

    // Annotated on its own: expands itself, with its options.
    #[instrument_fdr(log_args)]
    impl Token {
        pub fn new(b: u8) -> Token {
            Token(b)
        }
    }

    #[instrument_fdr(skip)]
    impl Default for Token {
        fn default() -> Token {
            Token::new(0)
        }
    }

    mod nested {
        pub(super) fn helper(x: u32) -> u32 {
            super::is_digit(x as u8) as u32
        }
    }
}
