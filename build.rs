//! Link options for the `grove` binary.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // Relative relocations packed (DT_RELR, glibc 2.36+): grove's table
        // of 20,000 of them is 480 KB that every start read and walked,
        // about a third of the pages a `grove --version` touched. A linker
        // or C library without it ignores the option.
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
