//! Every message type neuroburst knows, by `pkg/msg/Type` name: what bag readers check incoming
//! topics against and what bag writers take schemas from.

use super::typesys::TypeInfo;
use super::{
    builtin, diagnostic_msgs, geometry_msgs, lifecycle_msgs, nav_msgs, neuroburst_msgs, rcl_interfaces, rosgraph_msgs, sensor_msgs,
    RosMessage,
};

/// The names of all supported types, sorted.
pub fn type_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = all().iter().map(|f| f().name).collect();
    v.sort_unstable();
    v
}

fn all() -> Vec<fn() -> TypeInfo> {
    vec![
        builtin::Time::info,
        builtin::Empty::info,
        builtin::Header::info,
        builtin::MultiArrayDimension::info,
        builtin::MultiArrayLayout::info,
        builtin::Float32MultiArray::info,
        builtin::Float64MultiArray::info,
        geometry_msgs::Vector3::info,
        geometry_msgs::Point::info,
        geometry_msgs::Quaternion::info,
        geometry_msgs::Pose::info,
        geometry_msgs::PoseWithCovariance::info,
        geometry_msgs::Twist::info,
        geometry_msgs::TwistStamped::info,
        geometry_msgs::TwistWithCovariance::info,
        sensor_msgs::Image::info,
        sensor_msgs::CompressedImage::info,
        sensor_msgs::LaserScan::info,
        sensor_msgs::Imu::info,
        sensor_msgs::JointState::info,
        sensor_msgs::Range::info,
        sensor_msgs::PointField::info,
        sensor_msgs::PointCloud2::info,
        nav_msgs::Odometry::info,
        diagnostic_msgs::KeyValue::info,
        diagnostic_msgs::DiagnosticStatus::info,
        diagnostic_msgs::DiagnosticArray::info,
        rosgraph_msgs::Clock::info,
        lifecycle_msgs::State::info,
        lifecycle_msgs::Transition::info,
        lifecycle_msgs::TransitionDescription::info,
        lifecycle_msgs::TransitionEvent::info,
        rcl_interfaces::ParameterValue::info,
        rcl_interfaces::Parameter::info,
        rcl_interfaces::FloatingPointRange::info,
        rcl_interfaces::IntegerRange::info,
        rcl_interfaces::ParameterDescriptor::info,
        rcl_interfaces::ParameterEvent::info,
        rcl_interfaces::SetParametersResult::info,
        rcl_interfaces::ListParametersResult::info,
        neuroburst_msgs::BurstActivity::info,
        neuroburst_msgs::BurstStats::info,
    ]
}

/// Every service type the node serves (`pkg/srv/Type`) and its RIHS01 hash, what rmw_zenoh's
/// service keys and liveliness tokens carry.
pub fn service_types() -> Vec<(&'static str, String)> {
    use super::{std_srvs, RosService};
    fn entry<S: RosService>() -> (&'static str, String) {
        (S::TYPE, super::type_hash::<S>())
    }
    vec![
        entry::<lifecycle_msgs::ChangeState>(),
        entry::<lifecycle_msgs::GetState>(),
        entry::<lifecycle_msgs::GetAvailableStates>(),
        entry::<lifecycle_msgs::GetAvailableTransitions>(),
        entry::<rcl_interfaces::ListParameters>(),
        entry::<rcl_interfaces::GetParameters>(),
        entry::<rcl_interfaces::SetParameters>(),
        entry::<rcl_interfaces::SetParametersAtomically>(),
        entry::<rcl_interfaces::DescribeParameters>(),
        entry::<rcl_interfaces::GetParameterTypes>(),
        entry::<std_srvs::Trigger>(),
    ]
}

/// The description of type `name` (`pkg/msg/Type`; `pkg/Type` is accepted too).
pub fn lookup(name: &str) -> Option<TypeInfo> {
    let full = if name.contains("/msg/") { name.to_string() } else { name.replacen('/', "/msg/", 1) };
    all().into_iter().map(|f| f()).find(|t| t.name == full)
}

/// The RIHS01 hash of type `name` (what rmw_zenoh keys and liveliness tokens carry).
pub fn type_hash(name: &str) -> Option<String> {
    lookup(name).map(|t| super::typesys::rihs01(&t))
}

/// Decode `payload` as type `name` and drop the value: whether it is a valid message.
/// None when the type is unknown.
pub fn check(name: &str, payload: &[u8]) -> Option<Result<(), super::MsgError>> {
    use super::decode;
    macro_rules! try_types {
        ($($t:ty),*) => {
            $(if name == <$t>::TYPE {
                return Some(decode::<$t>(payload).map(|_| ()));
            })*
        };
    }
    try_types!(
        builtin::Time,
        builtin::Empty,
        builtin::Header,
        builtin::MultiArrayDimension,
        builtin::MultiArrayLayout,
        builtin::Float32MultiArray,
        builtin::Float64MultiArray,
        geometry_msgs::Vector3,
        geometry_msgs::Point,
        geometry_msgs::Quaternion,
        geometry_msgs::Pose,
        geometry_msgs::PoseWithCovariance,
        geometry_msgs::Twist,
        geometry_msgs::TwistStamped,
        geometry_msgs::TwistWithCovariance,
        sensor_msgs::Image,
        sensor_msgs::CompressedImage,
        sensor_msgs::LaserScan,
        sensor_msgs::Imu,
        sensor_msgs::JointState,
        sensor_msgs::Range,
        sensor_msgs::PointField,
        sensor_msgs::PointCloud2,
        nav_msgs::Odometry,
        diagnostic_msgs::KeyValue,
        diagnostic_msgs::DiagnosticStatus,
        diagnostic_msgs::DiagnosticArray,
        rosgraph_msgs::Clock,
        lifecycle_msgs::State,
        lifecycle_msgs::Transition,
        lifecycle_msgs::TransitionDescription,
        lifecycle_msgs::TransitionEvent,
        rcl_interfaces::ParameterValue,
        rcl_interfaces::Parameter,
        rcl_interfaces::FloatingPointRange,
        rcl_interfaces::IntegerRange,
        rcl_interfaces::ParameterDescriptor,
        rcl_interfaces::ParameterEvent,
        rcl_interfaces::SetParametersResult,
        rcl_interfaces::ListParametersResult,
        neuroburst_msgs::BurstActivity,
        neuroburst_msgs::BurstStats
    );
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_registered_type_can_be_checked() {
        for name in super::type_names() {
            assert!(super::check(name, &[]).is_some(), "{name}: registered, but check() does not know it");
        }
    }

    /// The hashes of ROS 2 Jazzy's own type descriptions (share/<pkg>/srv/<Type>.json, the
    /// wheels' `type_hashes`); tests/ros_wire.rs compares against the installed files too.
    #[test]
    fn service_type_hashes_are_those_of_ros() {
        let want = [
            ("lifecycle_msgs/srv/ChangeState", "356fe34f0475a43acf54542013af4167b0e729f77ea22ffb045c6ad8e20668e5"),
            ("lifecycle_msgs/srv/GetState", "800a0a5aae599782b02932de0caf563f6dc4e7e94b794eadde075ba2cbef9795"),
            ("lifecycle_msgs/srv/GetAvailableStates", "00a07d79d2207d71e81a8cbc1880e5d924cc16d4688ea8e8e06e443dc8f8aa1d"),
            ("lifecycle_msgs/srv/GetAvailableTransitions", "59b7ecefce0982a8a844b9f2c4f14764c1c4543cc55e72924e2aa4adad83e9bc"),
            ("rcl_interfaces/srv/ListParameters", "3e6062bfbb27bfb8730d4cef2558221f51a11646d78e7bb30a1e83afac3aad9d"),
            ("rcl_interfaces/srv/GetParameters", "bf9803d5c74cf989a5de3e0c2e99444599a627c7ff75f97b8c05b01003675cbc"),
            ("rcl_interfaces/srv/SetParameters", "56eed9a67e169f9cb6c1f987bc88f868c14a8fc9f743a263bc734c154015d7e0"),
            ("rcl_interfaces/srv/SetParametersAtomically", "0e192ef259c07fc3c07a13191d27002222e65e00ccec653ca05e856f79285fcd"),
            ("rcl_interfaces/srv/DescribeParameters", "845b484d71eb0673dae682f2e3ba3c4851a65a3dcfb97bddd82c5b57e91e4cff"),
            ("rcl_interfaces/srv/GetParameterTypes", "da199c878688b3e530bdfe3ca8f74cb9fa0c303101e980a9e8f260e25e1c80ca"),
            ("std_srvs/srv/Trigger", "eeff2cd6fa5ad9d27cdf4dec64818317839b62f212a91e6b5304b634b2062c5f"),
        ];
        let have = super::service_types();
        assert_eq!(have.len(), want.len());
        for ((name, hash), (w_name, w_hash)) in have.iter().zip(want) {
            assert_eq!((*name, hash.as_str()), (w_name, format!("RIHS01_{w_hash}").as_str()));
        }
    }
}
