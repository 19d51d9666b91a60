//! Invalid-plan corpus (filled by the fixtures work).
