//! Models, buckets, batches and the expected gradients, checked without a backend.

use super::*;
use crate::params::ddp::{Layer, DEFAULT_FIRST_BUCKET_BYTES};

#[test]
fn models_parse() {
    let m = Model::parse("mlp-tiny").unwrap();
    assert_eq!(m.layers.len(), 4);
    assert_eq!(m.params(), 4 * 256 * 256);
    let m = Model::parse("8x4x2+4x3").unwrap();
    assert_eq!(
        m.layers,
        vec![
            Layer { d_in: 8, d_out: 4 },
            Layer { d_in: 8, d_out: 4 },
            Layer { d_in: 4, d_out: 3 }
        ]
    );
    assert_eq!(Model::parse("mlp-1b").unwrap().params(), 16 * 8192 * 8192);
    for bad in ["", "8", "8x0", "8x4x0", "axb", "mlp-huge", "8x4+"] {
        let e = Model::parse(bad).unwrap_err().to_string();
        assert!(e.contains("mlp-tiny") && e.contains("IxO"), "{bad}: {e}");
    }
}

fn model(sizes: &[u64]) -> Model {
    Model {
        layers: sizes.iter().map(|&s| Layer { d_in: s, d_out: 1 }).collect(),
    }
}

#[test]
fn buckets_follow_ddp_assignment_by_size() {
    // layers of 10, 20, 30, 40 elements (4 B each); backward order is 3, 2, 1, 0
    let m = model(&[10, 20, 30, 40]);
    // one bucket per layer: every layer reaches the 1-byte cap alone
    let p = BucketPlan::new(&m, 4, 1, 0);
    assert_eq!(p.lens, vec![40, 30, 20, 10]);
    assert_eq!(p.last_layer, vec![3, 2, 1, 0]);
    assert_eq!(p.slot, vec![(3, 0), (2, 0), (1, 0), (0, 0)]);
    // many layers per bucket: close at ≥ 280 B = 70 elements
    let p = BucketPlan::new(&m, 4, 280, 0);
    assert_eq!(p.lens, vec![70, 30]);
    assert_eq!(p.slot, vec![(1, 20), (1, 0), (0, 40), (0, 0)]);
    assert_eq!(p.last_layer, vec![2, 0]);
    // everything in one bucket under a huge cap
    let p = BucketPlan::new(&m, 4, 1 << 30, 0);
    assert_eq!((p.lens.clone(), p.last_layer.clone()), (vec![100], vec![0]));
    // a layer larger than the cap is alone; the cap is a lower bound for closing
    let p = BucketPlan::new(&model(&[5, 100, 5, 5]), 4, 40, 0);
    assert_eq!(p.lens, vec![10, 100, 5]);
    // every element is covered exactly once
    for cap in [1, 40, 100, 400, 1 << 20] {
        let m = model(&[7, 1, 33, 2, 64]);
        let p = BucketPlan::new(&m, 4, cap, cap / 3);
        let total: usize = p.lens.iter().sum();
        assert_eq!(total as u64, m.params());
        for (l, (k, at)) in p.slot.iter().enumerate() {
            assert!(at + m.layers[l].params() as usize <= p.lens[*k]);
        }
    }
}

#[test]
fn the_first_bucket_has_its_own_cap() {
    // layers of 10, 20, 30, 40 elements (4 B each); backward order 3, 2, 1, 0
    let m = model(&[10, 20, 30, 40]);
    // first cap 40 B: layer 3 alone; then ≥ 240 B: layers 2, 1, 0 together
    let p = BucketPlan::new(&m, 4, 240, 40);
    assert_eq!(p.lens, vec![40, 60]);
    assert_eq!(p.last_layer, vec![3, 0]);
    // a first cap larger than the others: the first bucket takes more layers
    let p = BucketPlan::new(&m, 4, 1, 280);
    assert_eq!(p.lens, vec![70, 20, 10]);
    // 0: the first bucket like the others
    assert_eq!(
        BucketPlan::new(&m, 4, 280, 0),
        BucketPlan::new(&m, 4, 280, 280)
    );
    // DDP's defaults on mlp-small (8 × 4 MiB layers in f32): the first bucket closes
    // after one layer (≥ 1 MiB), the next ones every 7 layers (≥ 25 MiB)
    let m = Model::parse("mlp-small").unwrap();
    let p = BucketPlan::new(&m, 4, DEFAULT_BUCKET_BYTES, DEFAULT_FIRST_BUCKET_BYTES);
    assert_eq!(p.lens, vec![1 << 20, 7 << 20]);
    assert_eq!(p.last_layer, vec![7, 0]);
}

#[test]
fn expected_table_matches_a_direct_sum() {
    let batches = [3u64, 5, 4];
    let t = expected_table(&batches);
    // element (i, j) of layer l, computed the slow way
    for (l, i, j) in [(0u64, 0u64, 0u64), (1, 5, 7), (3, 13, 2), (2, 6, 9)] {
        let mut want = 0.0;
        for (d, &nb) in batches.iter().enumerate() {
            for b in 0..nb {
                want += x_entry(d as u64, l, b, i) * dy_entry(l, b, j);
            }
        }
        let got = t[((i + l) % 7) as usize][((j + 2 * l) % 5) as usize];
        assert_eq!(got, want, "l={l} i={i} j={j}");
    }
    // the gradient is not constant (validation can see misplaced elements)
    let distinct: std::collections::HashSet<i64> = t.iter().flatten().map(|v| *v as i64).collect();
    assert!(distinct.len() > 5, "{distinct:?}");
}

#[test]
fn exact_averages_stay_exact_and_others_get_a_bound() {
    assert_eq!(avg_tolerance(0.0, 64), 0.0);
    let t = avg_tolerance(1e-7, 10);
    assert!((t - 6e-6).abs() < 1e-12, "{t}");
    assert_eq!(avg_tolerance(0.5, 1000), 1.0);
}

#[test]
fn batches_split_and_flops() {
    let split: Vec<u64> = (0..3)
        .map(|d| device_batch(10, Scaling::Strong, d, 3))
        .collect();
    assert_eq!(split.iter().sum::<u64>(), 10);
    assert_eq!(device_batch(10, Scaling::Weak, 2, 3), 10);
    assert_eq!(device_batch(2, Scaling::Strong, 0, 4), 0);
    let m = Model::parse("4x3x2").unwrap();
    // layer 0: forward + dW; layer 1: forward + dX + dW; 2·b·12 FLOP each
    assert_eq!(step_flops(&m, 5), 5.0 * 2.0 * 5.0 * 12.0);
}
