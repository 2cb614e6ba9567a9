//! Index images (docs/operations.md "Index images"): an index read back from
//! its image answers exactly as the index built from the records, keeps
//! the schema check's marks, and an image that is not exactly what this
//! build wrote for that snapshot and SLA is refused.

use super::loading::varied;
use super::*;
use crate::inventory::index::ImageCache;
use crate::inventory::live::{Keep, VehicleCheck, index_received_into};
use crate::inventory::pieces::{self, Detail, Mode};

fn meta() -> SnapshotMeta {
    SnapshotMeta {
        snapshot_id: "snap-image-1".into(),
        organization_id: ORG.into(),
        rooftop_id: "roof.a".into(),
        version: 1,
        created_at: now() - Duration::minutes(5),
    }
}

/// A fresh directory for one test.
fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("gw-image-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn cache(dir: &std::path::Path) -> ImageCache {
    ImageCache::new(dir.to_owned(), &json!({"type": "object"}))
}

/// Builds `records` as the loader does with `images` (payloads into the
/// image, then the image completed), checking with `check`.
fn load(
    records: &[VehicleRecord],
    check: VehicleCheck,
    images: Option<ImageCache>,
) -> SnapshotIndex {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let records = records.to_vec();
    runtime.block_on(async move {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let building = tokio::spawn(index_received_into(
            rx,
            meta(),
            900,
            records.len(),
            Keep::All,
            check,
            images,
        ));
        for r in records {
            tx.send(r).await.unwrap();
        }
        drop(tx);
        building.await.unwrap().unwrap()
    })
}

fn records() -> Vec<VehicleRecord> {
    let mut out: Vec<VehicleRecord> = (0..60).map(varied).collect();
    for (i, r) in out.iter_mut().enumerate() {
        r.vehicle_id = format!("veh.roof.a.{i:05}");
        r.rooftop_id = "roof.a".into();
    }
    out
}

fn fails_some() -> VehicleCheck {
    Arc::new(|v: &Value| {
        let id = v["vehicle_id"].as_str().unwrap_or_default();
        if id.ends_with('3') || id.ends_with("17") {
            Err("refused".into())
        } else {
            Ok(())
        }
    })
}

/// Everything a request reads of an index, per row and per query.
fn answers(ix: SnapshotIndex) -> Vec<String> {
    let ix = Arc::new(ix);
    let mut out = Vec::new();
    for row in 0..ix.len() {
        out.push(serde_json::to_string(&ix.record(row)).unwrap());
        let pieces = ix.pieces(row).expect("pieces");
        out.push(format!("{:?}", pieces.get()));
        // A concise page reads only the concise block of the head: what it
        // writes is what the whole head writes in the concise form.
        let now_text = pieces::json_string(&pieces::timestamp(now()));
        let concise = ix.pieces_in(row, Detail::Concise).expect("concise pieces");
        let [mut from_concise, mut from_full] = [String::new(), String::new()];
        for (p, text) in [(&concise, &mut from_concise), (&pieces, &mut from_full)] {
            p.get()
                .write_detail(text, now(), &now_text, Mode::Live, Detail::Concise);
        }
        assert_eq!(from_concise, from_full, "row {row}");
        out.push(from_concise);
        out.push(format!(
            "{} {:?} {:?} {}",
            ix.vehicle_id(row),
            ix.vin(row),
            ix.stock_number(row),
            ix.piece_checked(row)
        ));
        out.push(format!("{:?}", ix.find_vehicle_id(ix.vehicle_id(row))));
        if let Some(vin) = ix.vin(row) {
            out.push(format!("{:?}", ix.find_vin(vin)));
        }
        if let Some(stock) = ix.stock_number(row) {
            out.push(format!("{:?}", ix.find_stock_number(stock)));
        }
    }
    out.push(format!("{:?}", ix.sources()));
    out.push(format!("{:?}", ix.makes_in_stock().collect::<Vec<_>>()));
    out.push(format!("{}", ix.inventory_sla_seconds()));
    for args in [
        json!({"organization_id": ORG}),
        json!({"organization_id": ORG, "sort": {"field": "advertised_price", "order": "asc"}, "page": {"limit": 7}}),
        json!({"organization_id": ORG, "sort": {"field": "odometer", "order": "desc"}}),
        json!({"organization_id": ORG, "query": "ds"}),
        json!({"organization_id": ORG, "query": "bleu"}),
        json!({"organization_id": ORG, "filters": {"condition": ["used"]}}),
        json!({"organization_id": ORG, "filters": {"make": ["Toyota"]}}),
        json!({"organization_id": ORG, "filters": {"year_min": 2020}}),
    ] {
        let q = query(args);
        let mut after: Option<PageKey> = None;
        loop {
            let page = search::search(std::slice::from_ref(&ix), &q, after.as_ref(), now());
            out.push(format!(
                "{} {:?} {:?}",
                page.total,
                page.facets,
                page.vehicles
                    .iter()
                    .map(|(_, row)| *row)
                    .collect::<Vec<_>>()
            ));
            match page.next {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
    out
}

/// Built with an image, then read back from it: every answer equals the
/// index built on the heap, and the failed (schema) rows stay marked.
#[test]
fn an_index_read_from_its_image_answers_as_the_built_one() {
    let d = dir("round-trip");
    let records = records();
    let heap = load(&records, fails_some(), None);
    assert!(
        (0..heap.len()).any(|row| !heap.piece_checked(row)),
        "some rows fail the check"
    );
    let heap_bytes = heap.heap_bytes();
    let expected = answers(heap);
    let images = cache(&d);
    // Built with its image: serves from the image's payloads.
    let built = load(&records, fails_some(), Some(images.clone()));
    assert_eq!(answers(built), expected, "built into an image");
    // A restart: read back, no record decoded, nothing checked again.
    let read = images
        .load(meta(), 900)
        .expect("a valid image")
        .expect("an image");
    assert!(
        read.heap_bytes() < heap_bytes / 2,
        "payloads stay in the file: {} of {heap_bytes} heap bytes",
        read.heap_bytes()
    );
    assert_eq!(answers(read), expected, "read from the image");
    let _ = std::fs::remove_dir_all(&d);
}

/// An image that is not exactly what this build wrote for the snapshot and
/// SLA is refused (`Err`), never read: corrupt, truncated, another layout,
/// snapshot, SLA or renderer.
#[test]
fn a_damaged_or_foreign_image_is_refused() {
    let d = dir("refused");
    let records = records();
    let images = cache(&d);
    drop(load(&records, fails_some(), Some(images.clone())));
    let path = images.path("snap-image-1", 900);
    let good = std::fs::read(&path).unwrap();
    assert!(images.load(meta(), 900).unwrap().is_some());
    let refused = |bytes: &[u8], why: &str| {
        std::fs::write(&path, bytes).unwrap();
        assert!(images.load(meta(), 900).is_err(), "{why}");
    };
    let mut corrupt = good.clone();
    let last = corrupt.len() - 3;
    corrupt[last] ^= 0x40;
    refused(&corrupt, "a flipped bit in the last array of the heap part");
    // A flip that leaves every structure valid (the first row's price):
    // only the checksum tells.
    let payload_len = u64::from_le_bytes(good[40..48].try_into().unwrap());
    let price = usize::try_from(512 + payload_len).unwrap() + 8 + 16;
    let mut price_flip = good.clone();
    price_flip[price] ^= 0x01;
    refused(&price_flip, "a flipped bit in a row's price");
    refused(&good[..good.len() - 1], "truncated by one byte");
    refused(&good[..good.len() / 2], "truncated in the payloads");
    refused(&good[..100], "truncated in the header");
    refused(&[], "empty");
    let mut layout = good.clone();
    layout[8] = layout[8].wrapping_add(1);
    refused(&layout, "another layout version");
    let mut renderer = good.clone();
    renderer[12] ^= 1;
    refused(&renderer, "another renderer");
    // Another snapshot's or SLA's image under this one's name.
    let mut other = meta();
    other.snapshot_id = "snap-image-2".into();
    std::fs::write(images.path("snap-image-2", 900), &good).unwrap();
    assert!(images.load(other, 900).is_err(), "another snapshot");
    std::fs::write(images.path("snap-image-1", 901), &good).unwrap();
    assert!(images.load(meta(), 901).is_err(), "another SLA");
    // Another schema (renderer fingerprint) names other files: none there.
    std::fs::write(&path, &good).unwrap();
    let other_schema = ImageCache::new(d.clone(), &json!({"type": "string"}));
    assert!(other_schema.load(meta(), 900).unwrap().is_none());
    assert!(images.load(meta(), 900).unwrap().is_some(), "the good one");
    let _ = std::fs::remove_dir_all(&d);
}
