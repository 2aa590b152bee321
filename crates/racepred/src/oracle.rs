//! The exact oracle (stub: filled in by the oracle work).
