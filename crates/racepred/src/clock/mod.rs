//! Logical clocks: vector clocks, epochs and tree clocks.
