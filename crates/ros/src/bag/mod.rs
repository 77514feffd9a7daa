//! rosbag2 bags: reading a bag directory (`metadata.yaml` with `.mcap` or sqlite3 `.db3` files,
//! possibly split) or a single `.mcap`/`.db3` file ([`read`]), and writing MCAP bags in the `ros2`
//! profile ([`writer`]) that rosbags, the mcap tools and Foxglove read.
//!
//! Bags are read whole into memory, messages ordered by log time (ties keep file order).

mod db3;
mod mcap_read;
pub mod read;
pub mod writer;

use std::path::PathBuf;

pub use read::open;
pub use writer::BagWriter;

/// A topic of a bag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topic {
    /// The topic's name (`/scan`).
    pub name: String,
    /// `pkg/msg/Type`.
    pub type_name: String,
    /// `cdr` for ROS 2.
    pub encoding: String,
}

/// One recorded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BagMessage {
    /// Index into [`Bag::topics`].
    pub topic: usize,
    /// Log (receive) time, ns.
    pub log_time: u64,
    /// CDR payload, header included.
    pub data: Vec<u8>,
}

/// A whole bag.
#[derive(Clone, Debug, Default)]
pub struct Bag {
    /// Its topics; a message names one by index.
    pub topics: Vec<Topic>,
    /// Ordered by log time.
    pub messages: Vec<BagMessage>,
    /// The files read.
    pub files: Vec<PathBuf>,
}

impl Bag {
    /// The index of topic `name`, if the bag has it.
    pub fn topic_index(&self, name: &str) -> Option<usize> {
        self.topics.iter().position(|t| t.name == name)
    }

    /// Add (or find) a topic; two files that disagree on its type are an error.
    pub(crate) fn intern(&mut self, t: Topic, file: &std::path::Path) -> Result<usize, BagError> {
        if let Some(i) = self.topic_index(&t.name) {
            if self.topics[i].type_name != t.type_name {
                return Err(BagError::Corrupt {
                    file: file.to_path_buf(),
                    message: format!("topic {} has type {} here and {} in an earlier file", t.name, t.type_name, self.topics[i].type_name),
                });
            }
            return Ok(i);
        }
        self.topics.push(t);
        Ok(self.topics.len() - 1)
    }
}

/// Errors of bag reading and writing; every one names the file.
#[derive(Debug, thiserror::Error)]
pub enum BagError {
    #[error("{file}: {source}")]
    /// The file could not be read or written.
    Io {
        /// The bag's file.
        file: PathBuf,
        #[source]
        /// What the system said.
        source: std::io::Error,
    },
    #[error("{file}: not a readable bag: {message}")]
    /// The file is not a bag that can be read.
    Corrupt {
        /// The bag's file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    #[error("{file}: {message}")]
    /// A bag of a kind or content this reader does not take.
    Unsupported {
        /// The bag's file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    #[error("{file}: cannot write: {message}")]
    /// The bag could not be written.
    Write {
        /// The bag's file.
        file: PathBuf,
        /// What failed.
        message: String,
    },
}
