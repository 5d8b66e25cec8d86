//! Link options for the `grove` binary, and the tests a machine skips.

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
    // `GROVE_SKIP_SHELLS=1` and the like, on a machine without the tool:
    // the tests that need it are compiled `#[ignore]`d (with the reason), so
    // `cargo test` lists them as ignored rather than passed.
    for (var, cfg) in [
        ("GROVE_SKIP_SHELLS", "skip_shells"),
        ("GROVE_SKIP_LFS", "skip_lfs"),
        ("GROVE_SKIP_BROWSER", "skip_browser"),
        ("GROVE_SKIP_REAL_AGENTS", "skip_real_agents"),
    ] {
        println!("cargo::rerun-if-env-changed={var}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if std::env::var(var).is_ok_and(|v| v == "1") {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
