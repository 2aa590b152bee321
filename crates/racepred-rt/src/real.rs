//! The real functions behind the interposed ones, each typed once where it is declared
//! (ThreadSanitizer's `REAL(func)`): `static REAL_X: Real<unsafe extern "C" fn(…) -> …>`,
//! then `REAL_X.get()(args)` at the call, with no cast there.

use core::ffi::{c_void, CStr};
use core::marker::PhantomData;
use core::sync::atomic::{AtomicPtr, Ordering};

use crate::buf;

/// The next definition of a C function after this library's (`dlsym(RTLD_NEXT)`, or
/// `dlvsym` for a given symbol version), looked up on first use, as a function pointer of
/// type `F`.
pub struct Real<F> {
    addr: AtomicPtr<c_void>,
    name: &'static CStr,
    version: Option<&'static CStr>,
    ty: PhantomData<F>,
}

// SAFETY: `Real` holds an atomic pointer and two `'static` C strings; `F` is only a type
// marker (a function pointer type, which is `Send` and `Sync`).
unsafe impl<F> Sync for Real<F> {}

impl<F: Copy> Real<F> {
    /// The real `name`.
    ///
    /// # Safety
    /// `F` is an `unsafe extern "C" fn` pointer type with the C signature of `name`.
    pub const unsafe fn new(name: &'static CStr) -> Real<F> {
        assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut c_void>());
        Real {
            addr: AtomicPtr::new(core::ptr::null_mut()),
            name,
            version: None,
            ty: PhantomData,
        }
    }

    /// The real `name` of symbol version `version`.
    ///
    /// # Safety
    /// As [`Real::new`], for that version of `name`.
    pub const unsafe fn versioned(name: &'static CStr, version: &'static CStr) -> Real<F> {
        assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut c_void>());
        Real {
            addr: AtomicPtr::new(core::ptr::null_mut()),
            name,
            version: Some(version),
            ty: PhantomData,
        }
    }

    /// The function (ends the process with a message if the C library has none).
    #[inline]
    pub fn get(&self) -> F {
        let mut p = self.addr.load(Ordering::Relaxed);
        if p.is_null() {
            p = self.resolve();
        }
        // SAFETY: `p` is the non-null address of `name` found by the dynamic linker, and
        // `F` is a function pointer type of its signature (the contract of `new`), of the
        // size of a pointer (asserted there).
        unsafe { core::mem::transmute_copy::<*mut c_void, F>(&p) }
    }

    #[cold]
    #[inline(never)]
    fn resolve(&self) -> *mut c_void {
        // SAFETY: both names are NUL-terminated C strings; `RTLD_NEXT` is a valid handle.
        let p = unsafe {
            match self.version {
                Some(v) => libc::dlvsym(libc::RTLD_NEXT, self.name.as_ptr(), v.as_ptr()),
                None => libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()),
            }
        };
        if p.is_null() {
            buf::say(b"racepred-rt: cannot find the real ");
            buf::say(self.name.to_bytes());
            buf::die(b"\n");
        }
        self.addr.store(p, Ordering::Relaxed);
        p
    }
}
