use std::path::Path;

use crate::error::{Error, Result};

/// Accepts any `1.x` version; a higher MAJOR is [`Error::UnsupportedVersion`]
/// ("upgrade grove"), and anything that is not `MAJOR.MINOR` (digits only)
/// is a parse error saying so. Both name the file.
///
/// ```
/// use std::path::Path;
/// let p = Path::new("thread.json");
/// assert!(grove::atsf::check_spec_version(p, "1.0").is_ok());
/// assert!(grove::atsf::check_spec_version(p, "1.9").is_ok());
/// assert!(matches!(
///     grove::atsf::check_spec_version(p, "2.0"),
///     Err(grove::Error::UnsupportedVersion { .. })
/// ));
/// assert!(matches!(
///     grove::atsf::check_spec_version(p, "1.1.5"),
///     Err(grove::Error::Parse { .. })
/// ));
/// ```
pub fn check_spec_version(path: &Path, version: &str) -> Result<()> {
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let Some((major, _minor)) = version
        .split_once('.')
        .and_then(|(major, minor)| Some((number(major)?, number(minor)?)))
    else {
        return Err(Error::parse(
            path,
            format!(
                "specVersion {version:?} is not a version: it must be MAJOR.MINOR, digits only (like \"1.1\")"
            ),
        ));
    };
    if major == 1 {
        Ok(())
    } else {
        Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            version: version.to_string(),
        })
    }
}
