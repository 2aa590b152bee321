//! Logical clocks: vector clocks, epochs and tree clocks.
//!
//! Invariants written down once (Miri `vector_clock.rs`, TSan `VectorClock`):
//! - a [`VectorClock`] maps every thread to a time; threads it has not seen are at 0, so
//!   clocks of different lengths compare as if padded with zeros;
//! - `set` never moves a component backwards (debug-asserted);
//! - `partial_cmp` is `None` exactly for concurrent clocks.

mod vc;

pub use vc::{Epoch, VectorClock};
