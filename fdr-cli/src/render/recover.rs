//! What `fdr recover` says of each box, one line each: the log written and how the process
//! died, a box left alone because its process runs, or where it looked when it found none.

use std::io::Write;

use crate::commands::recover::Outcome;
use crate::error::shown_path;
use crate::escape::shown;

/// Prints one outcome.
pub(crate) fn line(o: &Outcome, out: &mut dyn Write) -> std::io::Result<()> {
    match o {
        Outcome::Wrote {
            log,
            info,
            instead_of,
        } => {
            if let Some((wanted, why)) = instead_of {
                writeln!(
                    out,
                    "cannot write {} ({why}): writing the log in the current directory instead",
                    shown_path(wanted)
                )?;
            }
            let program = if info.program.is_empty() {
                "unnamed".into()
            } else {
                shown(&info.program)
            };
            writeln!(
                out,
                "wrote {}: process {} ({program}) {}",
                shown_path(log),
                info.pid,
                info.death()
            )
        }
        Outcome::LeftAlone { path, why } => {
            writeln!(out, "left alone: {} ({why})", shown_path(path))
        }
        Outcome::Skipped { path, why } => writeln!(out, "skipped: {} ({why})", shown_path(path)),
        Outcome::NoneFound { looked } => {
            let dirs: Vec<String> = looked.iter().map(|d| shown_path(d)).collect();
            writeln!(out, "no crash box in {}", dirs.join(", "))
        }
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn line() {
        use crate::commands::recover::Outcome;
        let mut out = Vec::new();
        let o = Outcome::LeftAlone {
            path: "/dev/shm/fdr-app-7.box".into(),
            why: "process 7 is running".into(),
        };
        crate::render::recover::line(&o, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "left alone: /dev/shm/fdr-app-7.box (process 7 is running)\n"
        );
    }
}
