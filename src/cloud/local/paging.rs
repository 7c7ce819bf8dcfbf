//! Cinder-style listing: newest first (created_at desc, id desc), `limit` + `marker` paging
//! where the marker is the id of the previous page's last item. An unknown marker is a 400,
//! as in Cinder.

use crate::cloud::{CloudResult, Page, PageRequest};

/// Sort `items` (with their creation time and id) and cut one page out of them.
pub fn paginate<T>(mut items: Vec<(u64, String, T)>, page: &PageRequest) -> CloudResult<Page<T>> {
    items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    let start = match &page.marker {
        None => 0,
        Some(m) => match items.iter().position(|(_, id, _)| id == m) {
            Some(i) => i + 1,
            None => {
                return Err(super::backend::bad_request(format!(
                    "marker {m} not found (it must be the id of an item of the previous page)"
                )))
            }
        },
    };
    let rest = items.len().saturating_sub(start);
    let take = page.limit.map_or(rest, |l| (l as usize).min(rest));
    let next_marker = (take < rest && take > 0).then(|| items[start + take - 1].1.clone());
    let items = items
        .into_iter()
        .skip(start)
        .take(take)
        .map(|(_, _, t)| t)
        .collect();
    Ok(Page { items, next_marker })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<(u64, String, u32)> {
        (0..5).map(|i| (i as u64, format!("id{i}"), i)).collect()
    }

    #[test]
    fn newest_first_in_pages() {
        let p = paginate(
            items(),
            &PageRequest {
                limit: Some(2),
                marker: None,
            },
        )
        .unwrap();
        assert_eq!(p.items, vec![4, 3]);
        assert_eq!(p.next_marker.as_deref(), Some("id3"));
        let p = paginate(
            items(),
            &PageRequest {
                limit: Some(2),
                marker: Some("id1".into()),
            },
        )
        .unwrap();
        assert_eq!(p.items, vec![0]);
        assert_eq!(p.next_marker, None);
        let all = paginate(items(), &PageRequest::default()).unwrap();
        assert_eq!(all.items.len(), 5);
        assert_eq!(all.next_marker, None);
    }

    #[test]
    fn unknown_marker_is_bad_request() {
        let e = paginate(
            items(),
            &PageRequest {
                limit: None,
                marker: Some("gone".into()),
            },
        )
        .unwrap_err();
        assert!(matches!(e, crate::cloud::CloudError::BadRequest { .. }));
    }
}
