//! Random well-formed traces (stub: filled in by the generator work).
