use crate::error::{Error, Result};

pub(crate) const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// The current time as ATSF writes it: UTC, milliseconds, `Z`.
pub fn now_timestamp() -> String {
    jiff::Timestamp::now().strftime(FORMAT).to_string()
}

/// Parses an ISO 8601 / RFC 3339 timestamp with an offset and rewrites it in
/// UTC with milliseconds and `Z`.
///
/// ```
/// assert_eq!(
///     grove::atsf::normalize_timestamp("2025-02-14T12:30:00+02:00").unwrap(),
///     "2025-02-14T10:30:00.000Z"
/// );
/// ```
pub fn normalize_timestamp(input: &str) -> Result<String> {
    let ts: jiff::Timestamp = input.parse().map_err(|e| {
        Error::InvalidMessage(format!(
            "timestamp {input:?} is not ISO 8601 with a UTC offset (e.g. 2025-02-14T10:30:00.000Z): {e}"
        ))
    })?;
    Ok(ts.strftime(FORMAT).to_string())
}
