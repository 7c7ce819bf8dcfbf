//! ListVolumes / ListSnapshots pagination tokens. A token names the cloud and the collection
//! the walk is in, plus the cloud's own marker, so paging continues across clouds (sorted by
//! name) and, for snapshots, from Cinder snapshots into Cinder backups. Any token this driver
//! did not issue is Aborted, as the spec asks ("Invalid starting_token").
//!
//! Format: `cc1.<collection>.<hex(cloud name)>.<marker>`; the marker may be empty (start of
//! that collection) and is opaque (the adapter's id of the last item returned).

use crate::driver::{Error, Result, TokenProblem};

const PREFIX: &str = "cc1";

/// Which collection a token continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    Volumes,
    Snapshots,
    Backups,
}

impl Collection {
    fn tag(self) -> &'static str {
        match self {
            Self::Volumes => "v",
            Self::Snapshots => "s",
            Self::Backups => "b",
        }
    }

    fn from_tag(tag: &str) -> Option<Self> {
        match tag {
            "v" => Some(Self::Volumes),
            "s" => Some(Self::Snapshots),
            "b" => Some(Self::Backups),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListToken {
    pub collection: Collection,
    pub cloud: String,
    pub marker: Option<String>,
}

impl ListToken {
    pub fn encode(&self) -> String {
        let hex: String = self.cloud.bytes().map(|b| format!("{b:02x}")).collect();
        format!(
            "{PREFIX}.{}.{hex}.{}",
            self.collection.tag(),
            self.marker.as_deref().unwrap_or("")
        )
    }

    /// Parse a `starting_token`; anything malformed, for another RPC's collections, or for a
    /// cloud not configured is Aborted (the caller restarts the listing).
    pub fn decode(token: &str, allowed: &[Collection], clouds: &[&str]) -> Result<Self> {
        let bad = |why: TokenProblem| Error::BadToken {
            token: token.to_string(),
            why,
        };
        let mut parts = token.splitn(4, '.');
        let (Some(prefix), Some(tag), Some(hex), Some(marker)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad(TokenProblem::NotIssued));
        };
        if prefix != PREFIX {
            return Err(bad(TokenProblem::NotIssued));
        }
        let collection = Collection::from_tag(tag)
            .filter(|c| allowed.contains(c))
            .ok_or_else(|| bad(TokenProblem::OtherListing))?;
        let cloud = decode_hex(hex).ok_or_else(|| bad(TokenProblem::DamagedCloud))?;
        if !clouds.contains(&cloud.as_str()) {
            return Err(bad(TokenProblem::UnknownCloud(cloud)));
        }
        Ok(Self {
            collection,
            cloud,
            marker: (!marker.is_empty()).then(|| marker.to_string()),
        })
    }
}

fn decode_hex(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for (cloud, marker) in [
            ("", None),
            ("region-1", Some("abc-def")),
            ("r.2", Some("a.b")),
        ] {
            let t = ListToken {
                collection: Collection::Backups,
                cloud: cloud.into(),
                marker: marker.map(str::to_string),
            };
            let all = [Collection::Snapshots, Collection::Backups];
            assert_eq!(
                ListToken::decode(&t.encode(), &all, &["", "region-1", "r.2"]).unwrap(),
                t
            );
        }
    }

    #[test]
    fn bad_tokens_are_aborted() {
        let clouds = ["", "r1"];
        let vols = [Collection::Volumes];
        for bad in [
            "invalid-token",
            "",
            "cc1.v",
            "cc2.v..x",
            "cc1.x..x",
            "cc1.v.zz.x",
            "cc1.v.7.x",
            "cc1.v.7232.x", // "r2" is not configured
            "cc1.s..x",     // a ListSnapshots token
        ] {
            let e = ListToken::decode(bad, &vols, &clouds).unwrap_err();
            assert!(matches!(e, Error::BadToken { .. }), "{bad}: {e:?}");
        }
        assert!(ListToken::decode("cc1.v.7231.m", &vols, &clouds).is_ok());
    }
}
