//! Effects through plangate: the pure half. `request` parses and checks what
//! steps ask for (`$PLANGATE_REQUESTS`), `patch` is the patch policy and
//! `gate` decides, after the run, what may be published. Applying is
//! `github::effects`; the engine reads the files. No I/O here.

pub(crate) mod gate;
pub(crate) mod patch;
pub(crate) mod request;
pub(crate) mod schemas;
