//! Writing MCAP bags in rosbag2's `ros2` profile: `ros2msg` schemas (the `.msg` text with its
//! dependencies), `cdr` channels with `offered_qos_profiles` and `topic_type_hash` (RIHS01) metadata,
//! log time = publish time.
//! Options are fixed (no compression, fixed chunk size, no wall-clock anywhere), so the same
//! messages give the same bytes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use super::BagError;
use crate::ros::qos::Qos;
use crate::ros::typesys::{msg_definition, rihs01, TypeInfo};

/// An open MCAP bag. Call [`BagWriter::finish`]; dropping it also finishes it, best effort.
pub struct BagWriter {
    writer: Option<mcap::Writer<BufWriter<File>>>,
    path: PathBuf,
    channels: BTreeMap<String, u16>,
    sequence: BTreeMap<u16, u32>,
}

/// A schema of another encoding than ROS 2's (Foxglove's protobuf schemas): its name, encoding
/// and bytes.
#[derive(Clone, Copy, Debug)]
pub struct ForeignSchema<'a> {
    /// The schema's name (`foxglove.SceneUpdate`).
    pub name: &'a str,
    /// Its encoding (`protobuf`).
    pub encoding: &'a str,
    /// Its bytes.
    pub data: &'a [u8],
}

impl BagWriter {
    /// A new MCAP bag at `path` (the file is created, or replaced).
    pub fn create(path: &Path) -> Result<BagWriter, BagError> {
        let file = File::create(path).map_err(|source| BagError::Io { file: path.to_path_buf(), source })?;
        let options = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("neuroburst ", env!("CARGO_PKG_VERSION")))
            .compression(None)
            .chunk_size(Some(256 * 1024));
        let writer = options.create(BufWriter::new(file)).map_err(|e| write_err(path, e))?;
        Ok(BagWriter { writer: Some(writer), path: path.to_path_buf(), channels: BTreeMap::new(), sequence: BTreeMap::new() })
    }

    /// Declare a topic of type `info`; returns its channel id.
    pub fn add_topic(&mut self, topic: &str, info: &TypeInfo, qos: Qos) -> Result<u16, BagError> {
        let w = self.writer.as_mut().expect("writer used after finish");
        let schema = w.add_schema(info.name, "ros2msg", msg_definition(info).as_bytes()).map_err(|e| write_err(&self.path, e))?;
        let mut meta = BTreeMap::new();
        meta.insert("offered_qos_profiles".to_string(), qos.to_yaml());
        // what rosbag2 (Jazzy and later) records as the topic's type_description_hash
        meta.insert("topic_type_hash".to_string(), rihs01(info));
        let id = w.add_channel(schema, topic, "cdr", &meta).map_err(|e| write_err(&self.path, e))?;
        self.channels.insert(topic.to_string(), id);
        Ok(id)
    }

    /// Declare a topic of another encoding than CDR (e.g. Foxglove's protobuf schemas: the schema
    /// `name`d, its bytes `data` in `schema_encoding`, messages in `message_encoding`); returns its
    /// channel id. ROS 2 tools skip such channels; Foxglove plays them.
    pub fn add_foreign_topic(&mut self, topic: &str, schema: ForeignSchema<'_>, message_encoding: &str) -> Result<u16, BagError> {
        let w = self.writer.as_mut().expect("writer used after finish");
        let id = w.add_schema(schema.name, schema.encoding, schema.data).map_err(|e| write_err(&self.path, e))?;
        let id = w.add_channel(id, topic, message_encoding, &BTreeMap::new()).map_err(|e| write_err(&self.path, e))?;
        self.channels.insert(topic.to_string(), id);
        Ok(id)
    }

    /// Write one message (a CDR payload) at `time_ns`.
    pub fn write(&mut self, channel: u16, time_ns: u64, data: &[u8]) -> Result<(), BagError> {
        let w = self.writer.as_mut().expect("writer used after finish");
        let seq = self.sequence.entry(channel).or_insert(0);
        *seq += 1;
        let header = mcap::records::MessageHeader { channel_id: channel, sequence: *seq, log_time: time_ns, publish_time: time_ns };
        w.write_to_known_channel(&header, data).map_err(|e| write_err(&self.path, e))
    }

    /// Write the summary and close the file.
    pub fn finish(mut self) -> Result<(), BagError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<(), BagError> {
        if let Some(mut w) = self.writer.take() {
            w.finish().map_err(|e| write_err(&self.path, e))?;
            let mut inner = w.into_inner();
            std::io::Write::flush(&mut inner).map_err(|source| BagError::Io { file: self.path.clone(), source })?;
        }
        Ok(())
    }
}

impl Drop for BagWriter {
    fn drop(&mut self) {
        if let Err(e) = self.finish_inner() {
            tracing::error!("{e}");
        }
    }
}

fn write_err(path: &Path, e: mcap::McapError) -> BagError {
    BagError::Write { file: path.to_path_buf(), message: e.to_string() }
}
