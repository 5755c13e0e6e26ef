//! What a recording writes, from the window it is handed: the log file's layout, the window
//! cut by age, the profile file, file names from the `out` template, and files written through a
//! temporary of their own so that no reader sees half of one.

#[cfg(feature = "record")]
pub(crate) mod age_cut;
#[cfg(feature = "record")]
pub(crate) mod atomic_file;
#[cfg(feature = "record")]
pub(crate) mod file_names;
#[cfg(feature = "record")]
pub(crate) mod log_file;
#[cfg(feature = "record")]
pub(crate) mod log_parts;
#[cfg(feature = "record")]
pub(crate) mod profile_file;
