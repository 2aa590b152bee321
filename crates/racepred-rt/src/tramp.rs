//! Return addresses for the hooks.
//!
//! The compiler's calls (`__tsan_read4(addr)` …) carry no program counter, and stable Rust
//! has no `__builtin_return_address`. Each exported entry point is therefore a two-
//! instruction naked function: it copies its return address (at `[rsp]` on entry) into the
//! first unused argument register and tail-jumps to the Rust implementation, which takes
//! the return address as an extra last argument and returns straight to the caller. No
//! frame pointers needed, no stack touched.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("racepred-rt supports x86-64 Linux only (its entry points are x86-64 trampolines)");

/// `hook!(reg, fn name(args) -> ret => implementation)`: exports `name` with the C
/// signature `args -> ret`; `implementation` takes `args` followed by the return address
/// (`usize`), which the trampoline puts into `reg`, the register of the next integer
/// argument (`rdi rsi rdx rcx r8 r9`).
///
/// `hook!(reg, "symbol" fn name(args) -> ret => implementation)` exports `name` as `symbol`.
macro_rules! hook {
    ($reg:literal, $sym:expr, fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:path) => {
        #[unsafe(naked)]
        #[unsafe(export_name = $sym)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {imp}",
                imp = sym $imp,
            )
        }
    };
    ($reg:literal, fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:path) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {imp}",
                imp = sym $imp,
            )
        }
    };
}
pub(crate) use hook;
