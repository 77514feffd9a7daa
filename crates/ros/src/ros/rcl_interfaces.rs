//! rcl_interfaces: ROS 2 parameters (what `ros2 param list/get/set/describe`, rqt and Foxglove's
//! parameter panel exchange with a node, and `/parameter_events`).

use super::builtin::Time;
use super::typesys::{ros_message, ros_service, Bounded, Byte};

ros_message! {
    /// A value and its type (rcl_interfaces/msg/ParameterType: 0 not set, 1 bool, 2 integer,
    /// 3 double, 4 string, 5 byte array, 6 bool array, 7 integer array, 8 double array,
    /// 9 string array).
    ParameterValue = "rcl_interfaces/msg/ParameterValue" {
        r#type: u8,
        bool_value: bool,
        integer_value: i64,
        double_value: f64,
        string_value: String,
        byte_array_value: Vec<Byte>,
        bool_array_value: Vec<bool>,
        integer_array_value: Vec<i64>,
        double_array_value: Vec<f64>,
        string_array_value: Vec<String>
    }
}

ros_message! {
    Parameter = "rcl_interfaces/msg/Parameter" { name: String, value: ParameterValue }
}

ros_message! {
    FloatingPointRange = "rcl_interfaces/msg/FloatingPointRange" { from_value: f64, to_value: f64, step: f64 }
}

ros_message! {
    IntegerRange = "rcl_interfaces/msg/IntegerRange" { from_value: i64, to_value: i64, step: u64 }
}

ros_message! {
    /// What `ros2 param describe` shows: the type, the description, whether it may change, its range.
    ParameterDescriptor = "rcl_interfaces/msg/ParameterDescriptor" {
        name: String,
        r#type: u8,
        description: String,
        additional_constraints: String,
        read_only: bool,
        dynamic_typing: bool,
        floating_point_range: Bounded<FloatingPointRange, 1>,
        integer_range: Bounded<IntegerRange, 1>
    }
}

ros_message! {
    /// `/parameter_events`: what a node's parameters became.
    ParameterEvent = "rcl_interfaces/msg/ParameterEvent" {
        stamp: Time,
        node: String,
        new_parameters: Vec<Parameter>,
        changed_parameters: Vec<Parameter>,
        deleted_parameters: Vec<Parameter>
    }
}

ros_message! {
    /// A set's answer, one per parameter: why it was refused.
    SetParametersResult = "rcl_interfaces/msg/SetParametersResult" { successful: bool, reason: String }
}

ros_message! {
    ListParametersResult = "rcl_interfaces/msg/ListParametersResult" { names: Vec<String>, prefixes: Vec<String> }
}

ros_service! {
    /// `~/list_parameters`: the names under `prefixes` (all when empty), `depth` levels of dots
    /// deep (0: every level).
    ListParameters = "rcl_interfaces/srv/ListParameters" {
        ListParametersRequest = "rcl_interfaces/srv/ListParameters_Request" { prefixes: Vec<String>, depth: u64 }
        ListParametersResponse = "rcl_interfaces/srv/ListParameters_Response" { result: ListParametersResult }
        ListParametersEvent = "rcl_interfaces/srv/ListParameters_Event"
    }
}

ros_service! {
    /// `~/get_parameters`: a value per name (type 0 for an unknown name).
    GetParameters = "rcl_interfaces/srv/GetParameters" {
        GetParametersRequest = "rcl_interfaces/srv/GetParameters_Request" { names: Vec<String> }
        GetParametersResponse = "rcl_interfaces/srv/GetParameters_Response" { values: Vec<ParameterValue> }
        GetParametersEvent = "rcl_interfaces/srv/GetParameters_Event"
    }
}

ros_service! {
    /// `~/set_parameters`: each set on its own, each with its answer.
    SetParameters = "rcl_interfaces/srv/SetParameters" {
        SetParametersRequest = "rcl_interfaces/srv/SetParameters_Request" { parameters: Vec<Parameter> }
        SetParametersResponse = "rcl_interfaces/srv/SetParameters_Response" { results: Vec<SetParametersResult> }
        SetParametersEvent = "rcl_interfaces/srv/SetParameters_Event"
    }
}

ros_service! {
    /// `~/set_parameters_atomically`: all or none.
    SetParametersAtomically = "rcl_interfaces/srv/SetParametersAtomically" {
        SetParametersAtomicallyRequest = "rcl_interfaces/srv/SetParametersAtomically_Request" { parameters: Vec<Parameter> }
        SetParametersAtomicallyResponse = "rcl_interfaces/srv/SetParametersAtomically_Response" { result: SetParametersResult }
        SetParametersAtomicallyEvent = "rcl_interfaces/srv/SetParametersAtomically_Event"
    }
}

ros_service! {
    /// `~/describe_parameters`.
    DescribeParameters = "rcl_interfaces/srv/DescribeParameters" {
        DescribeParametersRequest = "rcl_interfaces/srv/DescribeParameters_Request" { names: Vec<String> }
        DescribeParametersResponse = "rcl_interfaces/srv/DescribeParameters_Response" { descriptors: Vec<ParameterDescriptor> }
        DescribeParametersEvent = "rcl_interfaces/srv/DescribeParameters_Event"
    }
}

ros_service! {
    /// `~/get_parameter_types`.
    GetParameterTypes = "rcl_interfaces/srv/GetParameterTypes" {
        GetParameterTypesRequest = "rcl_interfaces/srv/GetParameterTypes_Request" { names: Vec<String> }
        GetParameterTypesResponse = "rcl_interfaces/srv/GetParameterTypes_Response" { types: Vec<u8> }
        GetParameterTypesEvent = "rcl_interfaces/srv/GetParameterTypes_Event"
    }
}
