//! Nova: servers and their volume attachments (`os-volume_attachments`). Attaching a
//! multiattach volume needs microversion 2.60, which the negotiated version covers when the
//! cloud offers it.

use async_trait::async_trait;
use http::Method;
use serde_json::json;

use super::api::{CallError, Request};
use super::dto::{NovaAttachmentEnvelope, NovaAttachmentList, ServerEnvelope};
use super::ids::segment;
use super::microversion::NOVA_MULTIATTACH;
use super::OpenStack;
use crate::cloud::{CloudError, CloudResult, Op, Resource, Server, ServerAttachment, Servers};

#[async_trait]
impl Servers for OpenStack {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        let ans = self
            .api
            .nova(Request::get(
                Op::ServerGet,
                format!("servers/{}", segment(Resource::Server, id)?),
            ))
            .await
            .map_err(|e| e.into_cloud(Resource::Server, id))?;
        let env: ServerEnvelope = ans
            .json(Op::ServerGet)
            .map_err(|e| e.into_cloud(Resource::Server, id))?;
        Ok(env.server.into())
    }

    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        if multiattach {
            self.api
                .nova_version()
                .await?
                .require(NOVA_MULTIATTACH, "attaching a multiattach volume")
                .map_err(CloudError::Unsupported)?;
        }
        let server = segment(Resource::Server, server_id)?;
        segment(Resource::Volume, volume_id)?;
        let body = json!({ "volumeAttachment": { "volumeId": volume_id } });
        let ans = self
            .api
            .nova(
                Request::new(
                    Op::ServerAttach,
                    Method::POST,
                    format!("servers/{server}/os-volume_attachments"),
                )
                .json(body),
            )
            .await
            .map_err(|e| not_found_of(e, server_id, volume_id, Resource::Volume))?;
        let env: NovaAttachmentEnvelope = ans
            .json(Op::ServerAttach)
            .map_err(|e| e.into_cloud(Resource::Attachment, volume_id))?;
        Ok(env.attachment.into())
    }

    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        let path = format!(
            "servers/{}/os-volume_attachments/{}",
            segment(Resource::Server, server_id)?,
            segment(Resource::Volume, volume_id)?
        );
        self.api
            .nova(Request::new(Op::ServerDetach, Method::DELETE, path))
            .await
            .map(|_| ())
            .map_err(|e| not_found_of(e, server_id, volume_id, Resource::Attachment))
    }

    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        let ans = self
            .api
            .nova(Request::get(
                Op::ServerAttachmentList,
                format!(
                    "servers/{}/os-volume_attachments",
                    segment(Resource::Server, server_id)?
                ),
            ))
            .await
            .map_err(|e| e.into_cloud(Resource::Server, server_id))?;
        let list: NovaAttachmentList = ans
            .json(Op::ServerAttachmentList)
            .map_err(|e| e.into_cloud(Resource::Server, server_id))?;
        Ok(list.attachments.into_iter().map(Into::into).collect())
    }
}

/// Nova's 404s name what is missing: "Instance X could not be found.", "Volume X could not be
/// found.", "Instance X is not attached to volume Y." (Nova 34) or "No volume Block Device
/// Mapping with id Y." (older): not attached there.
fn not_found_of(e: CallError, server_id: &str, volume_id: &str, otherwise: Resource) -> CloudError {
    if e.status() != Some(404) {
        return e.into_cloud(Resource::Server, server_id);
    }
    let msg = e.message().to_lowercase();
    let missing = msg.contains("could not be found");
    if msg.contains("not attached") || msg.contains("block device mapping") {
        CloudError::not_found(Resource::Attachment, volume_id)
    } else if missing && (msg.starts_with("instance") || msg.starts_with("server")) {
        CloudError::not_found(Resource::Server, server_id)
    } else if missing && msg.starts_with("volume") {
        CloudError::not_found(Resource::Volume, volume_id)
    } else {
        CloudError::not_found(otherwise, volume_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::openstack::errors::ApiError;

    fn nova_404(message: &str) -> CallError {
        let body = serde_json::json!({"itemNotFound": {"code": 404, "message": message}});
        CallError::Api(ApiError::from_response(
            http::StatusCode::NOT_FOUND,
            &Default::default(),
            body.to_string().as_bytes(),
        ))
    }

    #[test]
    fn nova_404s_name_what_is_missing() {
        let cases = [
            ("Instance s1 could not be found.", Resource::Server, "s1"),
            (
                "Instance s1 is not attached to volume v1",
                Resource::Attachment,
                "v1",
            ),
            (
                "No volume Block Device Mapping with id v1.",
                Resource::Attachment,
                "v1",
            ),
            ("Volume v1 could not be found.", Resource::Volume, "v1"),
        ];
        for (msg, resource, id) in cases {
            assert_eq!(
                not_found_of(nova_404(msg), "s1", "v1", Resource::Attachment),
                CloudError::not_found(resource, id),
                "{msg}"
            );
        }
    }
}
