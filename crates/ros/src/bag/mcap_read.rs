//! Reading one `.mcap` file (any profile; ROS 2 bags use `cdr` channels), streamed through the
//! mcap crate's sans-I/O reader with every record's length bounded by the file's size (its
//! `MessageStream` sets no bound, and a corrupt length then overflowed inside the crate: a panic
//! found by `tests/fuzz`), and the messages' total bounded by the memory the process may take.
//! Only the records a replay reads (schemas, channels, messages) are parsed: the crate's parser
//! of an attachment slices its body unchecked and panics on one shorter than its header and CRC
//! (another find of `tests/fuzz`), and a bag's attachments, metadata and indexes are not read.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use mcap::records::{op, Record};
use mcap::sans_io::linear_reader::{LinearReadEvent, LinearReader, LinearReaderOptions};

use super::{Bag, BagError, BagMessage, Topic};

pub fn read(file: &Path, bag: &mut Bag) -> Result<(), BagError> {
    let io = |source| BagError::Io { file: file.to_path_buf(), source };
    let mut f = std::fs::File::open(file).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    // No record is longer than the file; a chunk's records are bounded the same way (a chunk
    // decompresses record by record).
    let limit = usize::try_from(size).unwrap_or(usize::MAX).max(1 << 20);
    let mut reader = LinearReader::new_with_options(LinearReaderOptions::default().with_record_length_limit(limit));
    let budget = crate::memory::host_available();
    let mut held = 0u64;
    let mut schemas: HashMap<u16, String> = HashMap::new();
    let mut channels: HashMap<u16, (String, u16, String)> = HashMap::new();
    let mut index: HashMap<u16, usize> = HashMap::new();
    while let Some(event) = reader.next_event() {
        match event.map_err(|e| corrupt(file, e))? {
            LinearReadEvent::ReadRequest(need) => {
                let n = f.read(reader.insert(need)).map_err(io)?;
                reader.notify_read(n);
            }
            LinearReadEvent::Record { opcode, .. } if ![op::SCHEMA, op::CHANNEL, op::MESSAGE].contains(&opcode) => {}
            LinearReadEvent::Record { opcode, data } => match mcap::parse_record(opcode, data).map_err(|e| corrupt(file, e))? {
                Record::Schema { header, .. } => {
                    schemas.insert(header.id, header.name);
                }
                Record::Channel(c) => {
                    channels.insert(c.id, (c.topic, c.schema_id, c.message_encoding));
                }
                Record::Message { header, data } => {
                    let channel = header.channel_id;
                    let topic = match index.get(&channel) {
                        Some(&t) => t,
                        None => {
                            let (name, schema, encoding) = channels.get(&channel).cloned().ok_or_else(|| BagError::Corrupt {
                                file: file.to_path_buf(),
                                message: format!("MCAP: a message on channel {channel}, which no channel record declared"),
                            })?;
                            let type_name = schemas.get(&schema).cloned().unwrap_or_default();
                            let t = bag.intern(Topic { name, type_name, encoding }, file)?;
                            index.insert(channel, t);
                            t
                        }
                    };
                    held = held.saturating_add(data.len() as u64 + 64);
                    if held > budget.bytes {
                        return Err(BagError::Corrupt {
                            file: file.to_path_buf(),
                            message: format!(
                                "its messages take more than the {} bytes of memory this process may take ({}); a bag is read whole",
                                budget.bytes, budget.from
                            ),
                        });
                    }
                    bag.messages.push(BagMessage { topic, log_time: header.log_time, data: data.into_owned() });
                }
                _ => {}
            },
        }
    }
    Ok(())
}

fn corrupt(file: &Path, e: mcap::McapError) -> BagError {
    BagError::Corrupt { file: file.to_path_buf(), message: format!("MCAP: {e}") }
}
