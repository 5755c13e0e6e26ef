pub mod parser {
    use super::Token;
    pub struct Parser {
        pos: usize,
    }
    pub fn is_digit(b: u8) -> bool {
        b >= b'0' && b <= b'9'
    }
    #[inline]
    pub fn parse(input: &str) -> Vec<Token> {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::parse"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        );
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            Parser { pos: 0 }.tokens(input)
        }
    }
    #[inline]
    pub fn parse_all(inputs: &[&str]) -> usize {
        #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
        # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
        static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
            ::core::concat!(::core::module_path!(), "::parse_all"),
            ::core::file!(),
            ::core::line!(),
            ::fdr::__private_v1::FnKindTag::Function,
            &[],
        )
        .with_trigger(2_000_000_000);
        let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
        {
            inputs.iter().map(|i| parse(i).len()).sum()
        }
    }
    pub fn hot(input: &str) -> usize {
        input.len()
    }
    impl Parser {
        pub fn pos(&self) -> usize {
            self.pos
        }
        #[inline]
        fn tokens(&mut self, input: &str) -> Vec<Token> {
            #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
            # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
            static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
                ::core::concat!(::core::module_path!(), "::Parser::tokens"),
                ::core::file!(),
                ::core::line!(),
                ::fdr::__private_v1::FnKindTag::Function,
                &[],
            );
            let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
            {
                input.bytes().map(Token::from).collect()
            }
        }
    }
    pub trait Visit {
        #[inline]
        fn visit(&mut self, token: &Token) {
            #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
            # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
            static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
                ::core::concat!(::core::module_path!(), "::Visit::visit"),
                ::core::file!(),
                ::core::line!(),
                ::fdr::__private_v1::FnKindTag::Function,
                &[],
            );
            let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
            {
                self.enter(token)
            }
        }
        fn enter(&mut self, token: &Token);
    }
    #[instrument_fdr(log_args)]
    impl Token {
        pub fn new(b: u8) -> Token {
            Token(b)
        }
    }
    impl Default for Token {
        fn default() -> Token {
            Token::new(0)
        }
    }
    mod nested {
        #[inline]
        pub(super) fn helper(x: u32) -> u32 {
            #[::fdr::__private_v1::linkme::distributed_slice(::fdr::__private_v1::FUNCTIONS)]
            # [linkme (crate = :: fdr :: __private_v1 :: linkme)]
            static __FDR_FN: ::fdr::__private_v1::FnDesc = ::fdr::__private_v1::FnDesc::new(
                ::core::concat!(::core::module_path!(), "::helper"),
                ::core::file!(),
                ::core::line!(),
                ::fdr::__private_v1::FnKindTag::Function,
                &[],
            );
            let __fdr_guard = ::fdr::__private_v1::CallGuard::enter(&__FDR_FN);
            {
                super::is_digit(x as u8) as u32
            }
        }
    }
}
