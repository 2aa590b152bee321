//! Small slice helpers the analyses share.

/// Two distinct elements of a slice, mutably (`a != b`; equal indices panic at the indexing
/// in release builds too, since `x` then has `b` elements).
#[inline]
pub(crate) fn two<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    debug_assert_ne!(a, b);
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
