//! Trace writers: STD and binary (stub: filled in by the formats work).
