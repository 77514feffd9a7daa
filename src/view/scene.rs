//! The brain as Foxglove sees it: each cortical area a translucent box at its genome position
//! (`foxglove.SceneUpdate`, brighter while it fires, labelled with its id and fired count), and the
//! neurons that fired in a burst as points coloured by area (`foxglove.PointCloud`). Built from
//! the burst's products only, so a replay's frames are the same bytes run to run.

use foxglove::messages::packed_element_field::NumericType;
use foxglove::messages::{
    Color, CubePrimitive, PackedElementField, PointCloud, Pose, Quaternion, SceneEntity, SceneUpdate, TextPrimitive, Timestamp, Vector3,
};
use foxglove::Encode;

use crate::genome::Genome;
use crate::model::Layout;

/// The frame the scene and the points are drawn in.
pub const FRAME: &str = "brain";
/// Space between areas placed in a row (voxels), when the genome gives no positions.
const GAP: f64 = 4.0;

/// Colours of the areas, in genome order (repeated).
pub const PALETTE: [[u8; 3]; 8] =
    [[31, 119, 180], [214, 39, 40], [44, 160, 44], [255, 127, 14], [148, 103, 189], [140, 86, 75], [227, 119, 194], [23, 190, 207]];

/// One area's place and size in the scene.
#[derive(Clone, Debug)]
struct Place {
    id: String,
    origin: [f64; 3],
    dims: [f64; 3],
    neurons: u32,
    /// Neurons per voxel (points of one voxel are spread along z inside it).
    per_voxel: u32,
}

/// The static half of the scene: where every area is.
#[derive(Clone, Debug)]
pub struct Geometry {
    places: Vec<Place>,
}

impl Geometry {
    /// Areas at their genome positions; when every position is the origin (a genome that does not
    /// place its areas), side by side along x in genome order.
    pub fn new(genome: &Genome) -> Geometry {
        let placed = genome.areas.iter().any(|a| a.position != [0, 0, 0]);
        let mut x = 0.0;
        let places = genome
            .areas
            .iter()
            .map(|a| {
                let dims = a.dims.map(f64::from);
                let origin = if placed {
                    a.position.map(f64::from)
                } else {
                    let o = [x, 0.0, 0.0];
                    x += dims[0] + GAP;
                    o
                };
                Place { id: a.id.clone(), origin, dims, neurons: a.neurons() as u32, per_voxel: a.neurons_per_voxel.max(1) }
            })
            .collect();
        Geometry { places }
    }

    pub fn areas(&self) -> usize {
        self.places.len()
    }
}

fn stamp(time_ns: u64) -> Timestamp {
    Timestamp::new((time_ns / 1_000_000_000) as u32, (time_ns % 1_000_000_000) as u32)
}

fn colour(area: usize, alpha: f64) -> Color {
    let [r, g, b] = PALETTE[area % PALETTE.len()];
    Color { r: r as f64 / 255.0, g: g as f64 / 255.0, b: b as f64 / 255.0, a: alpha }
}

fn pose(p: [f64; 3]) -> Pose {
    Pose { position: Some(Vector3 { x: p[0], y: p[1], z: p[2] }), orientation: Some(Quaternion { x: 0.0, y: 0.0, z: 0.0, w: 1.0 }) }
}

/// The scene of one burst at `time_ns`: a box and a label per area; `fired[a]` neurons of area `a`
/// fired (None: not read back, the box stays dim and says so).
pub fn scene(g: &Geometry, time_ns: u64, fired: &[Option<u32>]) -> SceneUpdate {
    let entities = g
        .places
        .iter()
        .enumerate()
        .map(|(a, p)| {
            let f = fired.get(a).copied().flatten();
            let activity = f.map_or(0.0, |f| (f as f64 / p.neurons.max(1) as f64 * 10.0).min(1.0));
            let centre = [p.origin[0] + p.dims[0] / 2.0, p.origin[1] + p.dims[1] / 2.0, p.origin[2] + p.dims[2] / 2.0];
            let above = [centre[0], centre[1], p.origin[2] + p.dims[2] + 1.0];
            let count = f.map_or("not read back".to_string(), |f| format!("{f} / {} fired", p.neurons));
            SceneEntity {
                timestamp: Some(stamp(time_ns)),
                frame_id: FRAME.into(),
                id: format!("area/{}", p.id),
                cubes: vec![CubePrimitive {
                    pose: Some(pose(centre)),
                    size: Some(Vector3 { x: p.dims[0], y: p.dims[1], z: p.dims[2] }),
                    color: Some(colour(a, 0.12 + 0.6 * activity)),
                }],
                texts: vec![TextPrimitive {
                    pose: Some(pose(above)),
                    billboard: true,
                    font_size: 14.0,
                    scale_invariant: true,
                    color: Some(colour(a, 1.0)),
                    text: format!("{}: {count}", p.id),
                }],
                ..Default::default()
            }
        })
        .collect();
    SceneUpdate { deletions: vec![], entities }
}

/// The neurons of `fired` (ids read back, ascending) as points coloured by area, at most `max`
/// of them (an even subsample of the rest: every n-th).
pub fn points(g: &Geometry, layout: &Layout, time_ns: u64, fired: &[u32], max: usize) -> PointCloud {
    let step = fired.len().div_ceil(max.max(1)).max(1);
    let mut data = Vec::with_capacity(fired.len().div_ceil(step) * 16);
    for &n in fired.iter().step_by(step) {
        let c = layout.coord(n);
        let p = &g.places[c.area];
        let [x, y, z, k] = c.xyzk;
        let dz = (k as f64 + 0.5) / p.per_voxel as f64;
        for v in [p.origin[0] + x as f64 + 0.5, p.origin[1] + y as f64 + 0.5, p.origin[2] + z as f64 + dz] {
            data.extend_from_slice(&(v as f32).to_le_bytes());
        }
        let [r, g, b] = PALETTE[c.area % PALETTE.len()];
        data.extend_from_slice(&[r, g, b, 255]);
    }
    let field = |name: &str, offset: u32, t: NumericType| PackedElementField { name: name.into(), offset, r#type: t as i32 };
    PointCloud {
        timestamp: Some(stamp(time_ns)),
        frame_id: FRAME.into(),
        pose: Some(pose([0.0; 3])),
        point_stride: 16,
        fields: vec![
            field("x", 0, NumericType::Float32),
            field("y", 4, NumericType::Float32),
            field("z", 8, NumericType::Float32),
            field("red", 12, NumericType::Uint8),
            field("green", 13, NumericType::Uint8),
            field("blue", 14, NumericType::Uint8),
            field("alpha", 15, NumericType::Uint8),
        ],
        data: data.into(),
    }
}

/// A message's protobuf bytes (what the WebSocket and the bag carry).
pub fn bytes<T: Encode>(msg: &T) -> Vec<u8> {
    let mut buf = Vec::with_capacity(msg.encoded_len().unwrap_or(256));
    // Encoding into a Vec cannot run out of room.
    let _ = msg.encode(&mut buf);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_without_positions_sit_side_by_side_and_points_land_in_their_box() {
        let genome = Genome::from_yaml_str(include_str!("../../examples/diffdrive/genome.yaml")).unwrap();
        let layout = Layout::from_genome(&genome);
        let g = Geometry::new(&genome);
        assert_eq!(g.areas(), genome.areas.len());
        let last = layout.neurons - 1;
        let cloud = points(&g, &layout, 5, &[0, last], 10);
        assert_eq!(cloud.data.len(), 32);
        let x = |i: usize| f32::from_le_bytes(cloud.data[i * 16..i * 16 + 4].try_into().unwrap()) as f64;
        let area = layout.coord(last).area;
        let p = &g.places[area];
        assert!(x(1) >= p.origin[0] && x(1) <= p.origin[0] + p.dims[0], "{} not in {:?}", x(1), p);
        // subsampled to at most `max`
        let many: Vec<u32> = (0..layout.neurons).collect();
        assert!(points(&g, &layout, 5, &many, 7).data.len() <= 7 * 16);
        let s = scene(&g, 1_500_000_000, &vec![Some(1); g.areas()]);
        assert_eq!(s.entities.len(), g.areas());
        assert_eq!(bytes(&s), bytes(&scene(&g, 1_500_000_000, &vec![Some(1); g.areas()])));
    }
}
