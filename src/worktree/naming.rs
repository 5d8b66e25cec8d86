//! How grove names a task's branch: the branch prefix and template
//! settings, and the title's slug.

use std::path::Path;

use crate::atsf::Config;
use crate::error::Result;
use crate::git::Repo;

/// How grove names a task's branch: the settings it follows.
pub(crate) struct Naming {
    pub prefix: crate::setting::Setting<String>,
    pub template: crate::setting::Setting<String>,
}

impl Naming {
    /// The branch name for a task titled `title` with thread id prefix
    /// `short`, before any suffix.
    pub fn name(&self, title: &str, short: &str) -> String {
        let slug = slug(title);
        let slug = if slug.is_empty() {
            short
        } else {
            slug.as_str()
        };
        self.template
            .value
            .replace("{prefix}", &self.prefix.value)
            .replace("{slug}", slug)
            .replace("{id}", short)
    }
}

/// `title` as a branch name's words: lower case ASCII letters and digits
/// (a Latin letter's marks dropped), every other run of characters one `-`, at most 40 characters (cut at a
/// word's end where there is one).
pub(crate) fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if let Some(plain) = latin_letter(c) {
            out.push_str(plain);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.len() <= 40 {
        return trimmed.to_string();
    }
    let cut = &trimmed[..40];
    match cut.rfind('-') {
        Some(i) if i >= 20 => cut[..i].to_string(),
        _ => cut.trim_end_matches('-').to_string(),
    }
}

/// A Latin letter with a mark, as the plain letters a branch name can hold.
fn latin_letter(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => "a",
        'æ' => "ae",
        'ç' | 'č' | 'ć' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ě' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'ī' => "i",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => "o",
        'œ' => "oe",
        'ß' => "ss",
        'š' | 'ś' => "s",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' => "u",
        'ý' | 'ÿ' => "y",
        'ž' | 'ź' | 'ż' => "z",
        'ł' => "l",
        'ř' => "r",
        _ => return None,
    })
}

impl Naming {
    /// The settings of the repository whose config is `config` (read from
    /// `config_file`) and of the user.
    pub fn of(config: Option<&Config>, config_file: &Path) -> Naming {
        Naming {
            prefix: crate::setting::branch_prefix(config, config_file),
            template: crate::setting::branch_template(config, config_file),
        }
    }

    /// A free branch name for `title`: [`Naming::name`], with the first 4,
    /// then 8 characters of the thread id added only when a branch of that
    /// name exists (or the name is not one git takes). `None` when all
    /// three are taken.
    pub fn free(&self, repo: &Repo, title: &str, short: &str) -> Result<Option<String>> {
        let base = self.name(title, short);
        let four: String = short.chars().take(4).collect();
        for name in [
            base.clone(),
            format!("{base}-{four}"),
            format!("{base}-{short}"),
        ] {
            if repo.valid_branch_name(&name)? && !repo.branch_exists(&name)? {
                return Ok(Some(name));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn a_title_becomes_lower_case_words_joined_by_dashes() {
        assert_eq!(slug("Fix the login bug"), "fix-the-login-bug");
        assert_eq!(slug("  Fix: the `login` bug!! "), "fix-the-login-bug");
        assert_eq!(slug("Überprüfe die Anmeldung"), "uberprufe-die-anmeldung");
        assert_eq!(slug("Straße"), "strasse");
        assert_eq!(slug("日本語"), "");
        let long = slug("Make the parser handle deeply nested generic types without recursion");
        assert_eq!(long, "make-the-parser-handle-deeply-nested");
        assert!(long.len() <= 40);
    }
}
