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
}
