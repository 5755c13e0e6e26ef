//! Placeholder: the analyses land with issue 4.
