//! Effects through plangate. The pure half: `request` parses and checks what
//! steps ask for (`$PLANGATE_REQUESTS`), `patch` is the patch policy and
//! `gate` decides, after the run, what may be published. `push` is the one
//! part with I/O: it commits the run's changes onto a branch of the remote
//! in a private repository and pushes them, for whichever forge publishes
//! the pull or merge request (`github::pull`; the GitLab publisher calls it
//! the same way). Applying the rest is `github::effects`; `marker` is the
//! hidden marker both forges find their own items by.

pub(crate) mod gate;
pub(crate) mod marker;
pub(crate) mod patch;
pub(crate) mod push;
pub(crate) mod request;
pub(crate) mod schemas;
