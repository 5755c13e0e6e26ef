//! A call as the model hands it out: the replay engine's frame, close and [`Sink`]
//! ([`fdr_format::replay`], the one place records become calls), every analysis of the
//! command being a sink whose error is a [`CliError`].

pub use fdr_format::replay::{Both, Close, Frame, Sink, TaskEvent};

#[cfg(any(test, feature = "otlp"))]
use fdr_format::{CullKind, TaskLink};

use crate::CliError;

/// A sink that does nothing (for a first pass that needs no extra sink).
pub struct Nothing;

impl Sink for Nothing {
    type Error = CliError;

    #[inline]
    fn exit(
        &mut self,
        _: u32,
        _: usize,
        _: &Frame,
        _: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        Ok(())
    }
}

/// A sink whose errors become the command's: `sink`'s own errors through `lift` (which says
/// what the user can do about them), the rest of the model's sinks and filters being
/// [`CliError`] sinks. Only `fdr export` needs it (feature `otlp`).
#[cfg(any(test, feature = "otlp"))]
pub struct Lift<'a, S, F> {
    sink: &'a mut S,
    lift: F,
}

#[cfg(any(test, feature = "otlp"))]
impl<'a, S: Sink, F: Fn(S::Error) -> CliError> Lift<'a, S, F> {
    /// `sink`, its errors made [`CliError`]s by `lift`.
    pub fn new(sink: &'a mut S, lift: F) -> Self {
        Lift { sink, lift }
    }
}

#[cfg(any(test, feature = "otlp"))]
impl<S: Sink, F: Fn(S::Error) -> CliError> Sink for Lift<'_, S, F> {
    type Error = CliError;

    fn start(&mut self, thread: u32, tsc: u64) -> Result<(), CliError> {
        self.sink.start(thread, tsc).map_err(&self.lift)
    }

    #[inline]
    fn enter(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        args: &[u64],
    ) -> Result<(), CliError> {
        self.sink.enter(thread, depth, f, args).map_err(&self.lift)
    }

    #[inline]
    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        end: u64,
        how: Close,
        args: &[u64],
    ) -> Result<(), CliError> {
        self.sink
            .exit(thread, depth, f, end, how, args)
            .map_err(&self.lift)
    }

    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        self.sink.task(thread, tsc, window, ev).map_err(&self.lift)
    }

    fn polled(&mut self, thread: u32, id: u32, task: u64) -> Result<(), CliError> {
        self.sink.polled(thread, id, task).map_err(&self.lift)
    }

    fn link(&mut self, thread: u32, tsc: u64, link: TaskLink) -> Result<(), CliError> {
        self.sink.link(thread, tsc, link).map_err(&self.lift)
    }

    fn cull(&mut self, thread: u32, tsc: u64, kind: CullKind, id: u32) -> Result<(), CliError> {
        self.sink.cull(thread, tsc, kind, id).map_err(&self.lift)
    }

    fn end(&mut self, thread: u32, last: u64) -> Result<(), CliError> {
        self.sink.end(thread, last).map_err(&self.lift)
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn nothing() {
        use crate::model::call::{Close, Frame, Nothing, Sink};
        assert!(Nothing
            .exit(0, 0, &Frame::new(1, 0, 0, false), 5, Close::Exit, &[])
            .is_ok());
    }

    #[test]
    fn lift() {
        use crate::model::call::{Close, Frame, Lift, Sink};
        use crate::CliError;
        struct Full;
        impl Sink for Full {
            type Error = &'static str;
            fn exit(
                &mut self,
                _: u32,
                _: usize,
                _: &Frame,
                _: u64,
                _: Close,
                _: &[u64],
            ) -> Result<(), &'static str> {
                Err("full")
            }
        }
        let mut full = Full;
        let mut s = Lift::new(&mut full, |e| CliError::limit(e.to_string()));
        let e = s
            .exit(0, 0, &Frame::new(1, 0, 0, false), 5, Close::Exit, &[])
            .unwrap_err();
        assert!(e.to_string().contains("full"));
    }
}
