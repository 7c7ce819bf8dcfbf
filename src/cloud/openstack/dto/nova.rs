//! Nova's servers and volume attachments, and their conversions into the port's types.

use serde::Deserialize;

use super::lenient::null_as_default;
use crate::cloud::{Server, ServerAttachment};

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ServerDto {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: String,
    #[serde(rename = "OS-EXT-AZ:availability_zone", default)]
    pub availability_zone: Option<String>,
}

impl From<ServerDto> for Server {
    fn from(d: ServerDto) -> Self {
        Server {
            id: d.id,
            name: d.name,
            status: d.status,
            availability_zone: d.availability_zone.filter(|z| !z.is_empty()),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ServerEnvelope {
    pub server: ServerDto,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct NovaAttachmentDto {
    #[serde(rename = "volumeId")]
    pub volume_id: String,
    #[serde(default)]
    pub device: Option<String>,
}

impl From<NovaAttachmentDto> for ServerAttachment {
    fn from(d: NovaAttachmentDto) -> Self {
        ServerAttachment {
            volume_id: d.volume_id,
            device: d.device.filter(|d| !d.is_empty()),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct NovaAttachmentEnvelope {
    #[serde(rename = "volumeAttachment")]
    pub attachment: NovaAttachmentDto,
}

#[derive(Debug, Deserialize)]
pub struct NovaAttachmentList {
    #[serde(rename = "volumeAttachments")]
    pub attachments: Vec<NovaAttachmentDto>,
}
