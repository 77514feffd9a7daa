//! The type system shared by every message: how a field type writes and reads itself in CDR, how
//! it appears in a `.msg` definition, and how it is described for the RIHS01 type hash (REP-2011,
//! `type_description_interfaces/FieldType` ids).

use std::collections::BTreeMap;

use super::cdr::{CdrError, CdrReader, CdrWriter};

/// A field's type as REP-2011 describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldType {
    /// `FieldType` id: 1 nested, 2 int8 ... 17 string; +48 fixed array, +144 unbounded sequence.
    pub type_id: u8,
    /// Length of a fixed array, else 0.
    pub capacity: u64,
    /// `pkg/msg/Type` of a nested field (or of a sequence's elements), else "".
    pub nested: &'static str,
}

/// A message type: its name, constants (as `.msg` lines) and fields.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// `pkg/msg/Type`.
    pub name: &'static str,
    /// Constant lines of the `.msg` definition (`uint8 INFRARED=1`), possibly empty.
    pub constants: &'static [&'static str],
    /// Its fields, in order.
    pub fields: Vec<FieldInfo>,
}

/// One field of a message type.
#[derive(Clone, Debug)]
pub struct FieldInfo {
    /// The field's name.
    pub name: &'static str,
    /// Its type, as the type description says it.
    pub ty: FieldType,
    /// The type as written in a `.msg` file (`float64[9]`, `std_msgs/Header`).
    pub msg_type: String,
    /// The description of a nested type (also for sequences of it).
    pub nested: Option<fn() -> TypeInfo>,
}

/// A type that can be a message field.
pub trait CdrField: Sized {
    /// Fewest bytes one value takes on the wire (caps sequence counts before allocating).
    const MIN_SIZE: usize;
    /// Append the value.
    fn write(&self, w: &mut CdrWriter);
    /// Read a value.
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError>;
    /// The field type of the type description.
    fn field_type() -> FieldType;
    /// The type as written in a `.msg` file.
    fn msg_type() -> String;
    /// The nested type's description, when the type is a message.
    fn nested() -> Option<fn() -> TypeInfo> {
        None
    }
}

macro_rules! primitive {
    ($t:ty, $id:expr, $name:literal, $size:expr, $w:ident, $r:ident) => {
        impl CdrField for $t {
            const MIN_SIZE: usize = $size;
            fn write(&self, w: &mut CdrWriter) {
                w.$w(*self)
            }
            fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                r.$r()
            }
            fn field_type() -> FieldType {
                FieldType { type_id: $id, capacity: 0, nested: "" }
            }
            fn msg_type() -> String {
                $name.into()
            }
        }
    };
}
primitive!(i8, 2, "int8", 1, i8, i8);
primitive!(u8, 3, "uint8", 1, u8, u8);
primitive!(i16, 4, "int16", 2, i16, i16);
primitive!(u16, 5, "uint16", 2, u16, u16);
primitive!(i32, 6, "int32", 4, i32, i32);
primitive!(u32, 7, "uint32", 4, u32, u32);
primitive!(i64, 8, "int64", 8, i64, i64);
primitive!(u64, 9, "uint64", 8, u64, u64);
primitive!(f32, 10, "float32", 4, f32, f32);
primitive!(f64, 11, "float64", 8, f64, f64);
primitive!(bool, 15, "bool", 1, bool, bool);

/// The `.msg` type `byte` (IDL octet): one byte, described as FIELD_TYPE_BYTE (16), not uint8.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Byte(pub u8);

impl CdrField for Byte {
    const MIN_SIZE: usize = 1;
    fn write(&self, w: &mut CdrWriter) {
        w.u8(self.0)
    }
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.u8().map(Byte)
    }
    fn field_type() -> FieldType {
        FieldType { type_id: 16, capacity: 0, nested: "" }
    }
    fn msg_type() -> String {
        "byte".into()
    }
}

impl CdrField for String {
    const MIN_SIZE: usize = 4;
    fn write(&self, w: &mut CdrWriter) {
        w.string(self)
    }
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.string()
    }
    fn field_type() -> FieldType {
        FieldType { type_id: 17, capacity: 0, nested: "" }
    }
    fn msg_type() -> String {
        "string".into()
    }
}

/// Unbounded sequences (`T[]`).
impl<T: CdrField + 'static> CdrField for Vec<T> {
    const MIN_SIZE: usize = 4;
    fn write(&self, w: &mut CdrWriter) {
        w.len(self.len());
        // uint8[] as one copy (images)
        if let Some(bytes) = (self as &dyn std::any::Any).downcast_ref::<Vec<u8>>() {
            w.bytes(bytes);
            return;
        }
        for v in self {
            v.write(w);
        }
    }
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let n = r.seq_len(T::MIN_SIZE, "sequence")?;
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<u8>() {
            let bytes = r.bytes(n)?.to_vec();
            let boxed: Box<dyn std::any::Any> = Box::new(bytes);
            if let Ok(v) = boxed.downcast::<Vec<T>>() {
                return Ok(*v);
            }
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::read(r)?);
        }
        Ok(v)
    }
    fn field_type() -> FieldType {
        let t = T::field_type();
        FieldType { type_id: t.type_id + 144, capacity: 0, nested: t.nested }
    }
    fn msg_type() -> String {
        format!("{}[]", T::msg_type())
    }
    fn nested() -> Option<fn() -> TypeInfo> {
        T::nested()
    }
}

/// A bounded sequence (`T[<=N]`): at most N values; a longer one is refused when read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounded<T, const N: usize>(pub Vec<T>);

impl<T: CdrField + 'static, const N: usize> CdrField for Bounded<T, N> {
    const MIN_SIZE: usize = 4;
    fn write(&self, w: &mut CdrWriter) {
        w.len(self.0.len());
        for v in &self.0 {
            v.write(w);
        }
    }
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let n = r.seq_len(T::MIN_SIZE, "bounded sequence")?;
        if n > N {
            return Err(CdrError::Invalid(format!("a sequence of at most {N} holds {n}")));
        }
        (0..n).map(|_| T::read(r)).collect::<Result<Vec<T>, _>>().map(Bounded)
    }
    fn field_type() -> FieldType {
        let t = T::field_type();
        FieldType { type_id: t.type_id + 96, capacity: N as u64, nested: t.nested }
    }
    fn msg_type() -> String {
        format!("{}[<={N}]", T::msg_type())
    }
    fn nested() -> Option<fn() -> TypeInfo> {
        T::nested()
    }
}

/// A fixed-size array (`T[N]`, e.g. a covariance matrix).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Array<T, const N: usize>(pub [T; N]);

impl<T: Default + Copy, const N: usize> Default for Array<T, N> {
    fn default() -> Self {
        Array([T::default(); N])
    }
}

impl<T: CdrField + Default + Copy, const N: usize> CdrField for Array<T, N> {
    const MIN_SIZE: usize = T::MIN_SIZE * N;
    fn write(&self, w: &mut CdrWriter) {
        for v in &self.0 {
            v.write(w);
        }
    }
    fn read(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let mut a = [T::default(); N];
        for v in a.iter_mut() {
            *v = T::read(r)?;
        }
        Ok(Array(a))
    }
    fn field_type() -> FieldType {
        let t = T::field_type();
        FieldType { type_id: t.type_id + 48, capacity: N as u64, nested: t.nested }
    }
    fn msg_type() -> String {
        format!("{}[{N}]", T::msg_type())
    }
}

/// Every type `info` refers to (recursively), by name.
pub fn referenced(info: &TypeInfo) -> BTreeMap<&'static str, TypeInfo> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<TypeInfo> = info.fields.iter().filter_map(|f| f.nested.map(|n| n())).collect();
    while let Some(t) = stack.pop() {
        if t.name == info.name || out.contains_key(t.name) {
            continue;
        }
        stack.extend(t.fields.iter().filter_map(|f| f.nested.map(|n| n())));
        out.insert(t.name, t);
    }
    out
}

fn json_type(t: &TypeInfo, out: &mut String) {
    out.push_str(&format!("{{\"type_name\": \"{}\", \"fields\": [", t.name));
    // rosidl gives a message without fields (std_msgs/Empty) one uint8 member, in its type
    // description as on the wire (the one padding byte of an empty body).
    const PLACEHOLDER: [(&str, FieldType); 1] =
        [("structure_needs_at_least_one_member", FieldType { type_id: 3, capacity: 0, nested: "" })];
    let fields: Vec<(&str, FieldType)> =
        if t.fields.is_empty() { PLACEHOLDER.to_vec() } else { t.fields.iter().map(|f| (f.name, f.ty)).collect() };
    for (i, (name, ty)) in fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!(
            "{{\"name\": \"{name}\", \"type\": {{\"type_id\": {}, \"capacity\": {}, \"string_capacity\": 0, \"nested_type_name\": \"{}\"}}}}",
            ty.type_id, ty.capacity, ty.nested
        ));
    }
    out.push_str("]}");
}

/// The REP-2011 type description as canonical JSON (Python's `json.dumps` default separators),
/// the input of the RIHS01 hash.
pub fn type_description_json(info: &TypeInfo) -> String {
    let mut s = String::from("{\"type_description\": ");
    json_type(info, &mut s);
    s.push_str(", \"referenced_type_descriptions\": [");
    for (i, t) in referenced(info).values().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        json_type(t, &mut s);
    }
    s.push_str("]}");
    s
}

/// `RIHS01_` + SHA-256 of the type description.
pub fn rihs01(info: &TypeInfo) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(type_description_json(info).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("RIHS01_{hex}")
}

/// `pkg/msg/Type` -> `pkg/Type`, as `.msg` files name types.
pub fn short_name(name: &str) -> String {
    name.replacen("/msg/", "/", 1)
}

fn msg_lines(t: &TypeInfo) -> String {
    let mut s = String::new();
    for c in t.constants {
        s.push_str(c);
        s.push('\n');
    }
    for f in &t.fields {
        s.push_str(&format!("{} {}\n", f.msg_type, f.name));
    }
    s
}

/// The `ros2msg` schema of MCAP bags: the type's `.msg` text, then for every dependency (depth
/// first, in order of first use) a line of 80 `=`, `MSG: pkg/Type` and its text.
pub fn msg_definition(info: &TypeInfo) -> String {
    let mut text = msg_lines(info);
    let mut seen = vec![info.name];
    let mut order = Vec::new();
    fn visit(t: &TypeInfo, seen: &mut Vec<&'static str>, order: &mut Vec<TypeInfo>) {
        for f in &t.fields {
            if let Some(n) = f.nested {
                let d = n();
                if !seen.contains(&d.name) {
                    seen.push(d.name);
                    order.push(d.clone());
                    visit(&d, seen, order);
                }
            }
        }
    }
    visit(info, &mut seen, &mut order);
    for d in order {
        text.push_str(&"=".repeat(80));
        text.push_str(&format!("\nMSG: {}\n", short_name(d.name)));
        text.push_str(&msg_lines(&d));
    }
    text
}

/// Define a message struct with its CDR codec and type description.
macro_rules! ros_message {
    ($(#[$m:meta])* $name:ident = $ty:literal $(, constants [$($c:literal),*])? { $($(#[$fm:meta])* $field:ident : $fty:ty),* $(,)? }) => {
        $(#[$m])*
        #[doc = concat!("\n\nThe ROS 2 type `", $ty, "`.")]
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $(#[doc = concat!("`", stringify!($field), "`, as the `.msg` definition names it.")] $(#[$fm])* pub $field: $fty,)*
        }

        impl $crate::ros::typesys::CdrField for $name {
            const MIN_SIZE: usize = 0 $(+ <$fty as $crate::ros::typesys::CdrField>::MIN_SIZE)*;
            #[allow(unused_variables)] // a message without fields writes nothing
            fn write(&self, w: &mut $crate::ros::cdr::CdrWriter) {
                $($crate::ros::typesys::CdrField::write(&self.$field, w);)*
            }
            #[allow(unused_variables)] // nor reads anything
            fn read(r: &mut $crate::ros::cdr::CdrReader<'_>) -> Result<Self, $crate::ros::cdr::CdrError> {
                Ok($name { $($field: <$fty as $crate::ros::typesys::CdrField>::read(r)?,)* })
            }
            fn field_type() -> $crate::ros::typesys::FieldType {
                $crate::ros::typesys::FieldType { type_id: 1, capacity: 0, nested: $ty }
            }
            fn msg_type() -> String {
                $crate::ros::typesys::short_name($ty)
            }
            fn nested() -> Option<fn() -> $crate::ros::typesys::TypeInfo> {
                Some(<$name as $crate::ros::RosMessage>::info)
            }
        }

        impl $crate::ros::RosMessage for $name {
            const TYPE: &'static str = $ty;
            fn info() -> $crate::ros::typesys::TypeInfo {
                #[allow(unused_imports)] // a message without fields uses neither
                use $crate::ros::typesys::{CdrField, FieldInfo, TypeInfo};
                TypeInfo {
                    name: $ty,
                    constants: &[$($($c),*)?],
                    fields: vec![$(FieldInfo {
                        // `r#type` is the field `type`
                        name: stringify!($field).trim_start_matches("r#"),
                        ty: <$fty>::field_type(),
                        msg_type: <$fty>::msg_type(),
                        nested: <$fty>::nested(),
                    }),*],
                }
            }
        }
    };
}
pub(crate) use ros_message;

/// Define a service: its request and response messages, its event message (what service
/// introspection publishes) and the service itself, whose type description (the three messages
/// as fields, REP-2011) is what its RIHS01 hash covers.
macro_rules! ros_service {
    ($(#[$m:meta])* $name:ident = $ty:literal {
        $req:ident = $req_ty:literal { $($rf:ident : $rft:ty),* $(,)? }
        $resp:ident = $resp_ty:literal { $($pf:ident : $pft:ty),* $(,)? }
        $event:ident = $event_ty:literal
    }) => {
        $crate::ros::typesys::ros_message! { $req = $req_ty { $($rf: $rft),* } }
        $crate::ros::typesys::ros_message! { $resp = $resp_ty { $($pf: $pft),* } }
        $crate::ros::typesys::ros_message! {
            $event = $event_ty {
                info: $crate::ros::service_msgs::ServiceEventInfo,
                request: $crate::ros::typesys::Bounded<$req, 1>,
                response: $crate::ros::typesys::Bounded<$resp, 1>
            }
        }
        $crate::ros::typesys::ros_message! {
            $(#[$m])*
            $name = $ty { request_message: $req, response_message: $resp, event_message: $event }
        }
        impl $crate::ros::RosService for $name {
            type Request = $req;
            type Response = $resp;
        }
    };
}
pub(crate) use ros_service;
