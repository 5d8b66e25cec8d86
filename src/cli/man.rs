//! `grove man`

use std::path::{Path, PathBuf};

use super::Output;

/// Write grove's manual pages (roff), made from the same definitions as
/// `--help`: `grove.1` to stdout, or with --dir a page per command
/// (`grove.1`, `grove-new.1`, …) into DIR, e.g. ~/.local/share/man/man1.
#[derive(clap::Args)]
pub struct Args {
    /// Write every page into DIR instead.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let cmd = super::command();
    let Some(dir) = args.dir else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        out.raw(&buf)?;
        return Ok(super::exit::SUCCESS);
    };
    let dir = cwd.join(dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let mut pages = vec![("grove".to_string(), cmd.clone())];
    // grove's internal commands (`__delete-trash`) are no one's to type.
    for sub in cmd.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let name = format!("grove-{}", sub.get_name());
        // The page names the command as typed: `grove new`.
        let page = sub.clone().bin_name(format!("grove {}", sub.get_name()));
        pages.push((name, page));
    }
    for (name, page) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        let path = dir.join(format!("{name}.1"));
        grove::fsutil::write_atomic(&path, &buf)?;
        written.push(path);
    }
    out.status(&format!(
        "grove: wrote {} manual page(s) to {}",
        written.len(),
        dir.display()
    ));
    Ok(super::exit::SUCCESS)
}
