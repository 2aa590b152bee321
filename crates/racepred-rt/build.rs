fn main() {
    // Programs built with `gcc -fsanitize=thread` name their runtime `libtsan.so.2`
    // (DT_NEEDED); the loader accepts a library of that file name whatever its soname, but
    // an honest soname lets `ldd` and `LD_DEBUG` show which library was loaded.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtsan.so.2");
    println!("cargo:rerun-if-changed=build.rs");
}
