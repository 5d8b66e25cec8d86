use std::path::Path;

use crate::error::{Error, Result};

/// Accepts any `1.x` version and refuses everything else, naming the file.
///
/// ```
/// use std::path::Path;
/// let p = Path::new("thread.json");
/// assert!(grove::atsf::check_spec_version(p, "1.0").is_ok());
/// assert!(grove::atsf::check_spec_version(p, "1.9").is_ok());
/// assert!(grove::atsf::check_spec_version(p, "2.0").is_err());
/// ```
pub fn check_spec_version(path: &Path, version: &str) -> Result<()> {
    let supported = version
        .split_once('.')
        .filter(|(major, minor)| {
            major.parse::<u32>().is_ok_and(|m| m == 1) && minor.parse::<u32>().is_ok()
        })
        .is_some();
    if supported {
        Ok(())
    } else {
        Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            version: version.to_string(),
        })
    }
}
