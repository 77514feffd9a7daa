//! The 3-D sensor encoders against an independent implementation: rosbags (PyPI) builds and
//! serializes the messages a real lidar, depth camera and odometry source send (numpy structured
//! points with padding and extra fields, both byte orders, 16UC1 and 32FC1 depth), numpy computes
//! the voxels each message must light, and neuroburst's encoders must light exactly those.

use crate::common;

use common::python;
use neuroburst::encode::{Encoder, EncoderConfig};
use neuroburst::genome::Genome;
use neuroburst::model::Layout;

const GENOME: &str = "name: t
areas:
  - {id: cloud, kind: sensor, dims: [4, 4, 2]}
  - {id: depth, kind: sensor, dims: [4, 3, 5]}
  - {id: odom, kind: sensor, dims: [12, 1, 4]}
";

const PY: &str = r#"
import json
import numpy as np
from rosbags.typesys import Stores, get_typestore
ts = get_typestore(Stores.ROS2_JAZZY)
T = ts.types
rng = np.random.default_rng(7)
header = T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](sec=1, nanosec=2), frame_id='sensor')
PF = T['sensor_msgs/msg/PointField']
cases = []

# PointCloud2: box [-1, 1] x [-1, 1] x [-1, 0.5] into 4 x 4 x 2 voxels, min_points 3
lo, hi, dims, min_points = np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 0.5]), np.array([4, 4, 2]), 3
def expect_cloud(xyz):
    f = (xyz.astype(np.float64) - lo) / (hi - lo)
    ok = np.all((f >= 0.0) & (f < 1.0), axis=1)
    v = np.minimum((f[ok] * dims).astype(np.int64), dims - 1)
    keys, counts = np.unique(v, axis=0, return_counts=True)
    return sorted([[int(a) for a in k] for k, c in zip(keys, counts) if c >= min_points])

def cloud(fmt, big, height, width, pad_row):
    order = '>' if big else '<'
    size = 4 if fmt == 'f4' else 8
    dt = np.dtype({'names': ['x', 'y', 'z', 'intensity', 'ring'],
                   'formats': [order + fmt] * 3 + [order + 'f4', order + 'u2'],
                   'offsets': [0, size, 2 * size, 3 * size + 4, 3 * size + 8], 'itemsize': 3 * size + 16})
    n = height * width
    xyz = rng.uniform(-1.3, 1.3, size=(n, 3)).astype(np.float32 if fmt == 'f4' else np.float64)
    xyz[::41] = np.nan
    xyz[5::53, 1] = np.inf
    pts = np.zeros(n, dtype=dt)
    pts['x'], pts['y'], pts['z'] = xyz.T
    pts['intensity'] = rng.uniform(0, 100, n)
    pts['ring'] = np.arange(n) % 16
    rows = pts.tobytes()
    step, row = dt.itemsize, dt.itemsize * width + pad_row
    data = b''.join(rows[r * step * width:(r + 1) * step * width] + b'\xee' * pad_row for r in range(height))
    fields = [PF(name='x', offset=0, datatype=7 if size == 4 else 8, count=1),
              PF(name='y', offset=size, datatype=7 if size == 4 else 8, count=1),
              PF(name='z', offset=2 * size, datatype=7 if size == 4 else 8, count=1),
              PF(name='intensity', offset=3 * size + 4, datatype=7, count=1),
              PF(name='ring', offset=3 * size + 8, datatype=4, count=1)]
    msg = T['sensor_msgs/msg/PointCloud2'](header=header, height=height, width=width, fields=fields, is_bigendian=big,
                                           point_step=step, row_step=row, data=np.frombuffer(data, dtype=np.uint8), is_dense=False)
    return msg, expect_cloud(xyz)

for fmt, big, h, w, pad in [('f4', False, 1, 900, 0), ('f4', False, 16, 64, 0), ('f8', True, 3, 300, 8), ('f4', True, 2, 200, 12)]:
    msg, want = cloud(fmt, big, h, w, pad)
    cases.append({'encoder': '{kind: point_cloud, topic: /points, area: cloud, min: [-1.0, -1.0, -1.0], max: [1.0, 1.0, 0.5], min_points: 3}',
                  'type': 'sensor_msgs/msg/PointCloud2', 'bytes': bytes(ts.serialize_cdr(msg, 'sensor_msgs/msg/PointCloud2')).hex(),
                  'voxels': [[v[0], v[1], v[2]] for v in want], 'what': f'cloud {fmt} big={big} {h}x{w} pad {pad}'})

# depth images: 4 x 3 tiles, z 5 over [0.2, 2.5] m; the top row at the highest y
dx, dy, dz, dlo, dhi = 4, 3, 5, 0.2, 2.5
def expect_depth(d):
    h, w = d.shape
    near = np.full((dx, dy), np.inf)
    for y in range(h):
        for x in range(w):
            v = d[y, x]
            if not np.isfinite(v) or v <= 0 or v < dlo or v > dhi:
                continue
            tx, ty = min(x * dx // w, dx - 1), dy - 1 - min(y * dy // h, dy - 1)
            near[tx, ty] = min(near[tx, ty], v)
    out = []
    for tx in range(dx):
        for ty in range(dy):
            if np.isfinite(near[tx, ty]):
                f = min(max((near[tx, ty] - dlo) / (dhi - dlo), 0.0), 1.0)
                out.append([tx, ty, min(int(f * dz), dz - 1)])
    return sorted(out)

for enc, big, (h, w), pad in [('16UC1', 0, (12, 16), 0), ('16UC1', 1, (7, 9), 2), ('32FC1', 0, (12, 16), 0), ('32FC1', 1, (5, 11), 4)]:
    if enc == '16UC1':
        mm = rng.integers(0, 3000, size=(h, w)).astype(np.uint16)
        mm[rng.random((h, w)) < 0.2] = 0
        mm[:, -1] = 0  # an empty column of tiles
        metres = mm.astype(np.float64) * 1e-3
        raw = mm.astype('>u2' if big else '<u2')
    else:
        m = rng.uniform(0.0, 3.0, size=(h, w)).astype(np.float32)
        m[rng.random((h, w)) < 0.1] = np.nan
        m[rng.random((h, w)) < 0.05] = np.inf
        m[:, -1] = 0.0
        metres = m.astype(np.float64)
        raw = m.astype('>f4' if big else '<f4')
    step = raw.itemsize * w + pad
    data = b''.join(raw[r].tobytes() + b'\x00' * pad for r in range(h))
    msg = T['sensor_msgs/msg/Image'](header=header, height=h, width=w, encoding=enc, is_bigendian=big, step=step,
                                     data=np.frombuffer(data, dtype=np.uint8))
    cases.append({'encoder': '{kind: depth_image, topic: /depth, area: depth, min_range: 0.2, max_range: 2.5}',
                  'type': 'sensor_msgs/msg/Image', 'bytes': bytes(ts.serialize_cdr(msg, 'sensor_msgs/msg/Image')).hex(),
                  'voxels': expect_depth(metres), 'what': f'depth {enc} big={big} {h}x{w} pad {pad}'})

# Odometry: linear on columns 0..6, angular on 6..12 (the IMU's signed convention), z 4
V3 = T['geometry_msgs/msg/Vector3']
def signed(vals, mx, base):
    out = []
    for axis, v in enumerate(vals):
        if not np.isfinite(v) or abs(v) < mx / (2 * 4):
            continue
        f = min(max(abs(v) / mx, 0.0), 1.0)
        out.append([base + 2 * axis + (1 if v < 0 else 0), 0, min(int(f * 4), 3)])
    return out
lin, ang = [0.6, -0.05, -1.7], [0.0, 0.9, -0.3]
twist = T['geometry_msgs/msg/Twist'](linear=V3(x=lin[0], y=lin[1], z=lin[2]), angular=V3(x=ang[0], y=ang[1], z=ang[2]))
pose = T['geometry_msgs/msg/Pose'](position=T['geometry_msgs/msg/Point'](x=3.0, y=-1.0, z=0.0), orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0))
odom = T['nav_msgs/msg/Odometry'](header=header, child_frame_id='base_link',
    pose=T['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=np.zeros(36)),
    twist=T['geometry_msgs/msg/TwistWithCovariance'](twist=twist, covariance=np.zeros(36)))
cases.append({'encoder': '{kind: odometry, topic: /odom, area: odom, max_linear_velocity: 1.0, max_angular_velocity: 2.0}',
              'type': 'nav_msgs/msg/Odometry', 'bytes': bytes(ts.serialize_cdr(odom, 'nav_msgs/msg/Odometry')).hex(),
              'voxels': sorted(signed(lin, 1.0, 0) + signed(ang, 2.0, 6)), 'what': 'odometry'})
print(json.dumps(cases))
"#;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn point_cloud_depth_and_odometry_light_the_voxels_numpy_computes() {
    let layout = Layout::from_genome(&serde_yaml::from_str::<Genome>(GENOME).unwrap());
    let cases: serde_json::Value = serde_json::from_str(&python::run(PY, &[])).unwrap();
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 9);
    for case in cases {
        let what = case["what"].as_str().unwrap();
        let cfg: EncoderConfig = serde_yaml::from_str(case["encoder"].as_str().unwrap()).unwrap();
        let mut e = Encoder::new(&cfg, &layout).unwrap();
        let inj = e.encode(case["type"].as_str().unwrap(), &unhex(case["bytes"].as_str().unwrap())).unwrap();
        let mut got: Vec<[u32; 3]> = inj
            .iter()
            .map(|i| {
                let c = layout.coord(i.neuron);
                [c.xyzk[0], c.xyzk[1], c.xyzk[2]]
            })
            .collect();
        got.sort();
        let want: Vec<[u32; 3]> = serde_json::from_value::<Vec<[u32; 3]>>(case["voxels"].clone()).unwrap().into_iter().collect::<Vec<_>>();
        assert!(!want.is_empty(), "{what}: the case lights nothing");
        assert_eq!(got, want, "{what}");
    }
}
