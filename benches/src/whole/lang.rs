// The whole-program workload's one source: a tokenizer, a recursive-descent parser and a
// tree-walking interpreter for a small language of integer functions, `let`, `if`, `while`,
// `return` and `print`. It is written as the body of `lang!` so that `whole.rs` can build it
// several ways without a second copy: `lang!(#[attr] mod name; each: #[attr2])` defines module
// `name` with `#[attr]` on the module as a whole and `#[attr2]` on every function and method.
//
// Like a real crate it has many tiny helpers (accessors such as `Span::start`, character
// classes, `Parser::peek`), some of which cannot take long by fdr's rule (no calls, loops,
// macros, indexing or `?`) and some of which can (they call `get`, index a slice, use `?`), and
// real work: hashing identifiers, building a tree, running loops and recursion.

/// Defines the workload as module `$name`, annotated with `$whole` as a whole and with `$each`
/// on every function and method.
macro_rules! lang {
    ($(#[$whole:meta])* mod $name:ident; each: $(#[$each:meta])*) => {
        $(#[$whole])*
        #[allow(clippy::manual_range_contains, clippy::new_without_default)]
        pub mod $name {
            use std::collections::HashMap;

            /// Nesting of calls and blocks a program may reach before it is stopped.
            const MAX_DEPTH: usize = 200;

            /// Why a program failed, and where (a byte offset of its source).
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub struct Error {
                what: &'static str,
                at: u32,
            }

            impl Error {
                $(#[$each])*
                fn new(what: &'static str, at: u32) -> Error {
                    Error { what, at }
                }

                /// What went wrong.
                $(#[$each])*
                pub fn what(&self) -> &'static str {
                    self.what
                }

                /// Where, as a byte offset of the source.
                $(#[$each])*
                pub fn at(&self) -> u32 {
                    self.at
                }
            }

            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            struct Span {
                start: u32,
                end: u32,
            }

            impl Span {
                $(#[$each])*
                fn new(start: usize, end: usize) -> Span {
                    Span { start: start as u32, end: end as u32 }
                }

                $(#[$each])*
                fn start(self) -> u32 {
                    self.start
                }

                $(#[$each])*
                fn end(self) -> u32 {
                    self.end
                }

                $(#[$each])*
                fn width(self) -> u32 {
                    self.end - self.start
                }
            }

            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            struct Symbol(u32);

            impl Symbol {
                $(#[$each])*
                fn index(self) -> usize {
                    self.0 as usize
                }
            }

            #[derive(Default)]
            struct Interner {
                map: HashMap<Vec<u8>, Symbol>,
                names: Vec<Vec<u8>>,
            }

            impl Interner {
                $(#[$each])*
                fn intern(&mut self, name: &[u8]) -> Symbol {
                    if let Some(&symbol) = self.map.get(name) {
                        return symbol;
                    }
                    let symbol = Symbol(self.names.len() as u32);
                    self.names.push(name.to_vec());
                    self.map.insert(name.to_vec(), symbol);
                    symbol
                }

                $(#[$each])*
                fn name(&self, symbol: Symbol) -> &[u8] {
                    &self.names[symbol.index()]
                }

                $(#[$each])*
                fn len(&self) -> usize {
                    self.names.len()
                }
            }

            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            enum Tok {
                Int(i64),
                Ident(Symbol),
                Let,
                Fn,
                If,
                Else,
                While,
                Return,
                Print,
                LParen,
                RParen,
                LBrace,
                RBrace,
                Comma,
                Semi,
                Assign,
                Plus,
                Minus,
                Star,
                Slash,
                Percent,
                Lt,
                Le,
                Gt,
                Ge,
                EqEq,
                Ne,
                AndAnd,
                OrOr,
                Bang,
                Eof,
            }

            #[derive(Clone, Copy, Debug)]
            struct Token {
                tok: Tok,
                span: Span,
            }

            impl Token {
                $(#[$each])*
                fn tok(&self) -> Tok {
                    self.tok
                }

                $(#[$each])*
                fn span(&self) -> Span {
                    self.span
                }
            }

            $(#[$each])*
            fn is_digit(c: u8) -> bool {
                c >= b'0' && c <= b'9'
            }

            $(#[$each])*
            fn digit_value(c: u8) -> i64 {
                (c - b'0') as i64
            }

            $(#[$each])*
            fn is_ident_start(c: u8) -> bool {
                (c >= b'a' && c <= b'z') || (c >= b'A' && c <= b'Z') || c == b'_'
            }

            $(#[$each])*
            fn is_ident_continue(c: u8) -> bool {
                is_ident_start(c) || is_digit(c)
            }

            $(#[$each])*
            fn is_space(c: u8) -> bool {
                c == b' ' || c == b'\n' || c == b'\t' || c == b'\r'
            }

            $(#[$each])*
            fn keyword(word: &[u8]) -> Option<Tok> {
                match word {
                    b"let" => Some(Tok::Let),
                    b"fn" => Some(Tok::Fn),
                    b"if" => Some(Tok::If),
                    b"else" => Some(Tok::Else),
                    b"while" => Some(Tok::While),
                    b"return" => Some(Tok::Return),
                    b"print" => Some(Tok::Print),
                    _ => None,
                }
            }

            struct Lexer<'s> {
                src: &'s [u8],
                pos: usize,
            }

            impl<'s> Lexer<'s> {
                $(#[$each])*
                fn new(src: &'s str) -> Lexer<'s> {
                    Lexer { src: src.as_bytes(), pos: 0 }
                }

                /// The current byte, 0 at the end.
                $(#[$each])*
                fn peek(&self) -> u8 {
                    self.src.get(self.pos).copied().unwrap_or(0)
                }

                $(#[$each])*
                fn peek_next(&self) -> u8 {
                    self.src.get(self.pos + 1).copied().unwrap_or(0)
                }

                $(#[$each])*
                fn bump(&mut self) {
                    self.pos += 1;
                }

                $(#[$each])*
                fn skip_trivia(&mut self) {
                    loop {
                        let c = self.peek();
                        if is_space(c) {
                            self.bump();
                        } else if c == b'#' {
                            while self.peek() != b'\n' && self.peek() != 0 {
                                self.bump();
                            }
                        } else {
                            return;
                        }
                    }
                }

                $(#[$each])*
                fn number(&mut self) -> Result<Tok, Error> {
                    let start = self.pos;
                    let mut value: i64 = 0;
                    while is_digit(self.peek()) {
                        value = value
                            .checked_mul(10)
                            .and_then(|v| v.checked_add(digit_value(self.peek())))
                            .ok_or(Error::new("number too large", start as u32))?;
                        self.bump();
                    }
                    Ok(Tok::Int(value))
                }

                $(#[$each])*
                fn word(&mut self, names: &mut Interner) -> Tok {
                    let start = self.pos;
                    while is_ident_continue(self.peek()) {
                        self.bump();
                    }
                    let word = &self.src[start..self.pos];
                    keyword(word).unwrap_or_else(|| Tok::Ident(names.intern(word)))
                }

                $(#[$each])*
                fn punct(&mut self) -> Result<Tok, Error> {
                    let (tok, len) = match (self.peek(), self.peek_next()) {
                        (b'<', b'=') => (Tok::Le, 2),
                        (b'>', b'=') => (Tok::Ge, 2),
                        (b'=', b'=') => (Tok::EqEq, 2),
                        (b'!', b'=') => (Tok::Ne, 2),
                        (b'&', b'&') => (Tok::AndAnd, 2),
                        (b'|', b'|') => (Tok::OrOr, 2),
                        (b'(', _) => (Tok::LParen, 1),
                        (b')', _) => (Tok::RParen, 1),
                        (b'{', _) => (Tok::LBrace, 1),
                        (b'}', _) => (Tok::RBrace, 1),
                        (b',', _) => (Tok::Comma, 1),
                        (b';', _) => (Tok::Semi, 1),
                        (b'=', _) => (Tok::Assign, 1),
                        (b'+', _) => (Tok::Plus, 1),
                        (b'-', _) => (Tok::Minus, 1),
                        (b'*', _) => (Tok::Star, 1),
                        (b'/', _) => (Tok::Slash, 1),
                        (b'%', _) => (Tok::Percent, 1),
                        (b'<', _) => (Tok::Lt, 1),
                        (b'>', _) => (Tok::Gt, 1),
                        (b'!', _) => (Tok::Bang, 1),
                        _ => return Err(Error::new("unexpected character", self.pos as u32)),
                    };
                    self.pos += len;
                    Ok(tok)
                }

                $(#[$each])*
                fn next_token(&mut self, names: &mut Interner) -> Result<Token, Error> {
                    self.skip_trivia();
                    let start = self.pos;
                    let c = self.peek();
                    let tok = if c == 0 {
                        Tok::Eof
                    } else if is_digit(c) {
                        self.number()?
                    } else if is_ident_start(c) {
                        self.word(names)
                    } else {
                        self.punct()?
                    };
                    Ok(Token { tok, span: Span::new(start, self.pos) })
                }
            }

            /// The tokens of `src`, ending with `Eof`.
            $(#[$each])*
            fn tokenize(src: &str, names: &mut Interner) -> Result<Vec<Token>, Error> {
                let mut lexer = Lexer::new(src);
                let mut tokens = Vec::with_capacity(src.len() / 3);
                loop {
                    let token = lexer.next_token(names)?;
                    tokens.push(token);
                    if token.tok() == Tok::Eof {
                        return Ok(tokens);
                    }
                }
            }

            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            enum BinOp {
                Add,
                Sub,
                Mul,
                Div,
                Rem,
                Lt,
                Le,
                Gt,
                Ge,
                Eq,
                Ne,
                And,
                Or,
            }

            impl BinOp {
                $(#[$each])*
                fn additive(tok: Tok) -> Option<BinOp> {
                    match tok {
                        Tok::Plus => Some(BinOp::Add),
                        Tok::Minus => Some(BinOp::Sub),
                        _ => None,
                    }
                }

                $(#[$each])*
                fn multiplicative(tok: Tok) -> Option<BinOp> {
                    match tok {
                        Tok::Star => Some(BinOp::Mul),
                        Tok::Slash => Some(BinOp::Div),
                        Tok::Percent => Some(BinOp::Rem),
                        _ => None,
                    }
                }

                $(#[$each])*
                fn comparison(tok: Tok) -> Option<BinOp> {
                    match tok {
                        Tok::Lt => Some(BinOp::Lt),
                        Tok::Le => Some(BinOp::Le),
                        Tok::Gt => Some(BinOp::Gt),
                        Tok::Ge => Some(BinOp::Ge),
                        Tok::EqEq => Some(BinOp::Eq),
                        Tok::Ne => Some(BinOp::Ne),
                        _ => None,
                    }
                }

                $(#[$each])*
                fn short_circuits(self) -> bool {
                    self == BinOp::And || self == BinOp::Or
                }

                $(#[$each])*
                fn apply(self, a: i64, b: i64, at: u32) -> Result<i64, Error> {
                    Ok(match self {
                        BinOp::Add => a.wrapping_add(b),
                        BinOp::Sub => a.wrapping_sub(b),
                        BinOp::Mul => a.wrapping_mul(b),
                        BinOp::Div => a.checked_div(b).ok_or(Error::new("division by zero", at))?,
                        BinOp::Rem => a.checked_rem(b).ok_or(Error::new("division by zero", at))?,
                        BinOp::Lt => from_bool(a < b),
                        BinOp::Le => from_bool(a <= b),
                        BinOp::Gt => from_bool(a > b),
                        BinOp::Ge => from_bool(a >= b),
                        BinOp::Eq => from_bool(a == b),
                        BinOp::Ne => from_bool(a != b),
                        BinOp::And => from_bool(truthy(a) && truthy(b)),
                        BinOp::Or => from_bool(truthy(a) || truthy(b)),
                    })
                }
            }

            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            enum UnOp {
                Neg,
                Not,
            }

            impl UnOp {
                $(#[$each])*
                fn apply(self, v: i64) -> i64 {
                    match self {
                        UnOp::Neg => v.wrapping_neg(),
                        UnOp::Not => from_bool(!truthy(v)),
                    }
                }
            }

            $(#[$each])*
            fn truthy(v: i64) -> bool {
                v != 0
            }

            $(#[$each])*
            fn from_bool(b: bool) -> i64 {
                b as i64
            }

            #[derive(Debug)]
            enum Expr {
                Int(i64),
                Var(Symbol, u32),
                Unary(UnOp, Box<Expr>),
                Binary(BinOp, u32, Box<Expr>, Box<Expr>),
                Call(Symbol, u32, Vec<Expr>),
            }

            #[derive(Debug)]
            enum Stmt {
                Let(Symbol, Expr),
                Assign(Symbol, u32, Expr),
                If(Expr, Vec<Stmt>, Vec<Stmt>),
                While(Expr, Vec<Stmt>),
                Return(Expr),
                Print(Expr),
                Expr(Expr),
            }

            struct FnDef {
                name: Symbol,
                params: Vec<Symbol>,
                body: Vec<Stmt>,
            }

            impl FnDef {
                $(#[$each])*
                fn name(&self) -> Symbol {
                    self.name
                }

                $(#[$each])*
                fn arity(&self) -> usize {
                    self.params.len()
                }
            }

            #[derive(Default)]
            struct Program {
                fns: Vec<FnDef>,
                main: Vec<Stmt>,
            }

            impl Program {
                $(#[$each])*
                fn function(&self, name: Symbol) -> Option<&FnDef> {
                    self.fns.iter().find(|f| f.name() == name)
                }
            }

            struct Parser<'t> {
                tokens: &'t [Token],
                pos: usize,
            }

            impl<'t> Parser<'t> {
                $(#[$each])*
                fn peek(&self) -> Tok {
                    self.tokens[self.pos].tok()
                }

                $(#[$each])*
                fn peek_at(&self, ahead: usize) -> Tok {
                    self.tokens.get(self.pos + ahead).map_or(Tok::Eof, |t| t.tok())
                }

                /// Where the current token starts.
                $(#[$each])*
                fn at(&self) -> u32 {
                    self.tokens[self.pos].span().start()
                }

                $(#[$each])*
                fn advance(&mut self) -> Token {
                    let token = self.tokens[self.pos];
                    if token.tok() != Tok::Eof {
                        self.pos += 1;
                    }
                    token
                }

                $(#[$each])*
                fn check(&self, tok: Tok) -> bool {
                    self.peek() == tok
                }

                $(#[$each])*
                fn eat(&mut self, tok: Tok) -> bool {
                    if self.check(tok) {
                        self.advance();
                        true
                    } else {
                        false
                    }
                }

                $(#[$each])*
                fn expect(&mut self, tok: Tok, what: &'static str) -> Result<Span, Error> {
                    if self.check(tok) {
                        Ok(self.advance().span())
                    } else {
                        Err(Error::new(what, self.at()))
                    }
                }

                $(#[$each])*
                fn semicolon(&mut self) -> Result<(), Error> {
                    self.expect(Tok::Semi, "expected `;`").map(|_| ())
                }

                $(#[$each])*
                fn ident(&mut self) -> Result<Symbol, Error> {
                    match self.peek() {
                        Tok::Ident(symbol) => {
                            self.advance();
                            Ok(symbol)
                        }
                        _ => Err(Error::new("expected a name", self.at())),
                    }
                }

                $(#[$each])*
                fn program(&mut self) -> Result<Program, Error> {
                    let mut program = Program::default();
                    while !self.check(Tok::Eof) {
                        if self.check(Tok::Fn) {
                            let f = self.function()?;
                            if program.function(f.name()).is_some() {
                                return Err(Error::new("function defined twice", self.at()));
                            }
                            program.fns.push(f);
                        } else {
                            program.main.push(self.statement()?);
                        }
                    }
                    Ok(program)
                }

                $(#[$each])*
                fn function(&mut self) -> Result<FnDef, Error> {
                    self.expect(Tok::Fn, "expected `fn`")?;
                    let name = self.ident()?;
                    self.expect(Tok::LParen, "expected `(`")?;
                    let mut params = Vec::new();
                    if !self.check(Tok::RParen) {
                        loop {
                            params.push(self.ident()?);
                            if !self.eat(Tok::Comma) {
                                break;
                            }
                        }
                    }
                    self.expect(Tok::RParen, "expected `)`")?;
                    let body = self.block()?;
                    Ok(FnDef { name, params, body })
                }

                $(#[$each])*
                fn block(&mut self) -> Result<Vec<Stmt>, Error> {
                    self.expect(Tok::LBrace, "expected `{`")?;
                    let mut stmts = Vec::new();
                    while !self.eat(Tok::RBrace) {
                        if self.check(Tok::Eof) {
                            return Err(Error::new("expected `}`", self.at()));
                        }
                        stmts.push(self.statement()?);
                    }
                    Ok(stmts)
                }

                $(#[$each])*
                fn statement(&mut self) -> Result<Stmt, Error> {
                    match self.peek() {
                        Tok::Let => {
                            self.advance();
                            let name = self.ident()?;
                            self.expect(Tok::Assign, "expected `=`")?;
                            let value = self.expr()?;
                            self.semicolon()?;
                            Ok(Stmt::Let(name, value))
                        }
                        Tok::If => self.if_statement(),
                        Tok::While => {
                            self.advance();
                            let cond = self.expr()?;
                            let body = self.block()?;
                            Ok(Stmt::While(cond, body))
                        }
                        Tok::Return => {
                            self.advance();
                            let value = self.expr()?;
                            self.semicolon()?;
                            Ok(Stmt::Return(value))
                        }
                        Tok::Print => {
                            self.advance();
                            let value = self.expr()?;
                            self.semicolon()?;
                            Ok(Stmt::Print(value))
                        }
                        Tok::Ident(name) if self.peek_at(1) == Tok::Assign => {
                            let at = self.at();
                            self.advance();
                            self.advance();
                            let value = self.expr()?;
                            self.semicolon()?;
                            Ok(Stmt::Assign(name, at, value))
                        }
                        _ => {
                            let value = self.expr()?;
                            self.semicolon()?;
                            Ok(Stmt::Expr(value))
                        }
                    }
                }

                $(#[$each])*
                fn if_statement(&mut self) -> Result<Stmt, Error> {
                    self.expect(Tok::If, "expected `if`")?;
                    let cond = self.expr()?;
                    let then = self.block()?;
                    let otherwise = if !self.eat(Tok::Else) {
                        Vec::new()
                    } else if self.check(Tok::If) {
                        vec![self.if_statement()?]
                    } else {
                        self.block()?
                    };
                    Ok(Stmt::If(cond, then, otherwise))
                }

                $(#[$each])*
                fn expr(&mut self) -> Result<Expr, Error> {
                    self.or_expr()
                }

                $(#[$each])*
                fn or_expr(&mut self) -> Result<Expr, Error> {
                    let mut lhs = self.and_expr()?;
                    while self.check(Tok::OrOr) {
                        let at = self.advance().span().start();
                        let rhs = self.and_expr()?;
                        lhs = Expr::Binary(BinOp::Or, at, Box::new(lhs), Box::new(rhs));
                    }
                    Ok(lhs)
                }

                $(#[$each])*
                fn and_expr(&mut self) -> Result<Expr, Error> {
                    let mut lhs = self.comparison()?;
                    while self.check(Tok::AndAnd) {
                        let at = self.advance().span().start();
                        let rhs = self.comparison()?;
                        lhs = Expr::Binary(BinOp::And, at, Box::new(lhs), Box::new(rhs));
                    }
                    Ok(lhs)
                }

                $(#[$each])*
                fn comparison(&mut self) -> Result<Expr, Error> {
                    let lhs = self.sum()?;
                    match BinOp::comparison(self.peek()) {
                        Some(op) => {
                            let at = self.advance().span().start();
                            let rhs = self.sum()?;
                            Ok(Expr::Binary(op, at, Box::new(lhs), Box::new(rhs)))
                        }
                        None => Ok(lhs),
                    }
                }

                $(#[$each])*
                fn sum(&mut self) -> Result<Expr, Error> {
                    let mut lhs = self.product()?;
                    while let Some(op) = BinOp::additive(self.peek()) {
                        let at = self.advance().span().start();
                        let rhs = self.product()?;
                        lhs = Expr::Binary(op, at, Box::new(lhs), Box::new(rhs));
                    }
                    Ok(lhs)
                }

                $(#[$each])*
                fn product(&mut self) -> Result<Expr, Error> {
                    let mut lhs = self.unary()?;
                    while let Some(op) = BinOp::multiplicative(self.peek()) {
                        let at = self.advance().span().start();
                        let rhs = self.unary()?;
                        lhs = Expr::Binary(op, at, Box::new(lhs), Box::new(rhs));
                    }
                    Ok(lhs)
                }

                $(#[$each])*
                fn unary(&mut self) -> Result<Expr, Error> {
                    let op = match self.peek() {
                        Tok::Minus => UnOp::Neg,
                        Tok::Bang => UnOp::Not,
                        _ => return self.primary(),
                    };
                    self.advance();
                    Ok(Expr::Unary(op, Box::new(self.unary()?)))
                }

                $(#[$each])*
                fn primary(&mut self) -> Result<Expr, Error> {
                    let token = self.advance();
                    let at = token.span().start();
                    match token.tok() {
                        Tok::Int(v) => Ok(Expr::Int(v)),
                        Tok::Ident(name) if self.eat(Tok::LParen) => {
                            Ok(Expr::Call(name, at, self.arguments()?))
                        }
                        Tok::Ident(name) => Ok(Expr::Var(name, at)),
                        Tok::LParen => {
                            let inner = self.expr()?;
                            self.expect(Tok::RParen, "expected `)`")?;
                            Ok(inner)
                        }
                        _ => Err(Error::new("expected an expression", at)),
                    }
                }

                $(#[$each])*
                fn arguments(&mut self) -> Result<Vec<Expr>, Error> {
                    let mut args = Vec::new();
                    if self.eat(Tok::RParen) {
                        return Ok(args);
                    }
                    loop {
                        args.push(self.expr()?);
                        if !self.eat(Tok::Comma) {
                            break;
                        }
                    }
                    self.expect(Tok::RParen, "expected `)` after the arguments")?;
                    Ok(args)
                }
            }

            /// The program in `tokens`.
            $(#[$each])*
            fn parse(tokens: &[Token]) -> Result<Program, Error> {
                Parser { tokens, pos: 0 }.program()
            }

            /// The variables of one call, newest last.
            struct Frame {
                vars: Vec<(Symbol, i64)>,
            }

            impl Frame {
                $(#[$each])*
                fn new() -> Frame {
                    Frame { vars: Vec::with_capacity(8) }
                }

                $(#[$each])*
                fn get(&self, name: Symbol) -> Option<i64> {
                    self.vars.iter().rev().find(|v| v.0 == name).map(|v| v.1)
                }

                $(#[$each])*
                fn set(&mut self, name: Symbol, value: i64) -> bool {
                    match self.vars.iter_mut().rev().find(|v| v.0 == name) {
                        Some(slot) => {
                            slot.1 = value;
                            true
                        }
                        None => false,
                    }
                }

                $(#[$each])*
                fn define(&mut self, name: Symbol, value: i64) {
                    self.vars.push((name, value));
                }

                $(#[$each])*
                fn mark(&self) -> usize {
                    self.vars.len()
                }

                $(#[$each])*
                fn forget_after(&mut self, mark: usize) {
                    self.vars.truncate(mark);
                }
            }

            enum Flow {
                Next,
                Return(i64),
            }

            struct Interp<'p> {
                program: &'p Program,
                /// The main program's frame, then one per active call.
                frames: Vec<Frame>,
                output: u64,
                printed: u64,
                fuel: u64,
            }

            impl<'p> Interp<'p> {
                $(#[$each])*
                fn new(program: &'p Program, fuel: u64) -> Interp<'p> {
                    Interp { program, frames: vec![Frame::new()], output: 0, printed: 0, fuel }
                }

                $(#[$each])*
                fn frame(&mut self) -> &mut Frame {
                    let top = self.frames.len() - 1;
                    &mut self.frames[top]
                }

                $(#[$each])*
                fn tick(&mut self, at: u32) -> Result<(), Error> {
                    if self.fuel == 0 {
                        return Err(Error::new("out of fuel", at));
                    }
                    self.fuel -= 1;
                    Ok(())
                }

                $(#[$each])*
                fn lookup(&self, name: Symbol, at: u32) -> Result<i64, Error> {
                    let local = self.frames.last().and_then(|f| f.get(name));
                    local
                        .or_else(|| self.frames[0].get(name))
                        .ok_or(Error::new("undefined variable", at))
                }

                $(#[$each])*
                fn assign(&mut self, name: Symbol, value: i64, at: u32) -> Result<(), Error> {
                    if self.frame().set(name, value) || self.frames[0].set(name, value) {
                        Ok(())
                    } else {
                        Err(Error::new("assignment to an undefined variable", at))
                    }
                }

                $(#[$each])*
                fn print(&mut self, value: i64) {
                    self.output = mix(self.output, value as u64);
                    self.printed += 1;
                }

                $(#[$each])*
                fn eval(&mut self, expr: &Expr) -> Result<i64, Error> {
                    match expr {
                        Expr::Int(v) => Ok(*v),
                        Expr::Var(name, at) => self.lookup(*name, *at),
                        Expr::Unary(op, inner) => Ok(op.apply(self.eval(inner)?)),
                        Expr::Binary(op, at, lhs, rhs) => self.binary(*op, *at, lhs, rhs),
                        Expr::Call(name, at, args) => self.call(*name, *at, args),
                    }
                }

                $(#[$each])*
                fn binary(&mut self, op: BinOp, at: u32, lhs: &Expr, rhs: &Expr) -> Result<i64, Error> {
                    let a = self.eval(lhs)?;
                    if op.short_circuits() && truthy(a) == (op == BinOp::Or) {
                        return Ok(from_bool(truthy(a)));
                    }
                    let b = self.eval(rhs)?;
                    op.apply(a, b, at)
                }

                $(#[$each])*
                fn call(&mut self, name: Symbol, at: u32, args: &[Expr]) -> Result<i64, Error> {
                    let program = self.program;
                    let f = program.function(name).ok_or(Error::new("undefined function", at))?;
                    if f.arity() != args.len() {
                        return Err(Error::new("wrong number of arguments", at));
                    }
                    if self.frames.len() >= MAX_DEPTH {
                        return Err(Error::new("calls nested too deep", at));
                    }
                    let mut frame = Frame::new();
                    for (param, arg) in f.params.iter().zip(args) {
                        let value = self.eval(arg)?;
                        frame.define(*param, value);
                    }
                    self.frames.push(frame);
                    let flow = self.block(&f.body);
                    self.frames.pop();
                    match flow? {
                        Flow::Return(value) => Ok(value),
                        Flow::Next => Ok(0),
                    }
                }

                $(#[$each])*
                fn block(&mut self, stmts: &[Stmt]) -> Result<Flow, Error> {
                    let mark = self.frame().mark();
                    let mut flow = Ok(Flow::Next);
                    for stmt in stmts {
                        flow = self.exec(stmt);
                        if !matches!(flow, Ok(Flow::Next)) {
                            break;
                        }
                    }
                    self.frame().forget_after(mark);
                    flow
                }

                $(#[$each])*
                fn exec(&mut self, stmt: &Stmt) -> Result<Flow, Error> {
                    match stmt {
                        Stmt::Let(name, value) => {
                            let value = self.eval(value)?;
                            self.frame().define(*name, value);
                        }
                        Stmt::Assign(name, at, value) => {
                            let value = self.eval(value)?;
                            self.assign(*name, value, *at)?;
                        }
                        Stmt::If(cond, then, otherwise) => {
                            let branch = if truthy(self.eval(cond)?) { then } else { otherwise };
                            return self.block(branch);
                        }
                        Stmt::While(cond, body) => return self.while_loop(cond, body),
                        Stmt::Return(value) => return Ok(Flow::Return(self.eval(value)?)),
                        Stmt::Print(value) => {
                            let value = self.eval(value)?;
                            self.print(value);
                        }
                        Stmt::Expr(value) => {
                            self.eval(value)?;
                        }
                    }
                    Ok(Flow::Next)
                }

                $(#[$each])*
                fn while_loop(&mut self, cond: &Expr, body: &[Stmt]) -> Result<Flow, Error> {
                    while truthy(self.eval(cond)?) {
                        self.tick(0)?;
                        if let Flow::Return(value) = self.block(body)? {
                            return Ok(Flow::Return(value));
                        }
                    }
                    Ok(Flow::Next)
                }
            }

            $(#[$each])*
            fn mix(hash: u64, value: u64) -> u64 {
                (hash ^ value).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5)
            }

            /// Runs `program` with `fuel` loop iterations at most; a checksum of what it printed.
            $(#[$each])*
            fn execute(program: &Program, fuel: u64) -> Result<u64, Error> {
                let mut interp = Interp::new(program, fuel);
                let flow = interp.block(&program.main)?;
                let last = match flow {
                    Flow::Return(value) => value as u64,
                    Flow::Next => 0,
                };
                Ok(mix(mix(interp.output, interp.printed), last))
            }

            /// Tokenizes, parses and runs `src` (a million loop iterations at most): a checksum
            /// of what it printed, or of the error that stopped it.
            $(#[$each])*
            pub fn run_source(src: &str) -> u64 {
                let mut names = Interner::default();
                let result = tokenize(src, &mut names)
                    .and_then(|tokens| parse(&tokens))
                    .and_then(|program| execute(&program, 1_000_000));
                match result {
                    Ok(checksum) => mix(checksum, names.len() as u64),
                    Err(e) => error_checksum(&e, &names),
                }
            }

            $(#[$each])*
            fn error_checksum(e: &Error, names: &Interner) -> u64 {
                let first = if names.len() > 0 { names.name(Symbol(0)).len() } else { 0 };
                mix(mix(e.what().len() as u64, u64::from(e.at())), first as u64)
            }

            /// How many tokens `src` has, and their total width (a cheap pass of the lexer).
            $(#[$each])*
            pub fn token_stats(src: &str) -> (usize, u64) {
                let mut names = Interner::default();
                match tokenize(src, &mut names) {
                    Ok(tokens) => {
                        (tokens.len(), tokens.iter().map(|t| u64::from(t.span().width())).sum())
                    }
                    Err(e) => (0, u64::from(e.at()) + u64::from(Span::new(0, 0).end())),
                }
            }
        }
    };
}
