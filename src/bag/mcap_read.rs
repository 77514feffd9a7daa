//! Reading one `.mcap` file (any profile; ROS 2 bags use `cdr` channels).

use std::path::Path;

use super::{Bag, BagError, BagMessage, Topic};

pub fn read(file: &Path, bag: &mut Bag) -> Result<(), BagError> {
    let buf = std::fs::read(file).map_err(|source| BagError::Io { file: file.to_path_buf(), source })?;
    let stream = mcap::MessageStream::new(&buf).map_err(|e| corrupt(file, e))?;
    let mut index: std::collections::HashMap<u16, usize> = Default::default();
    for m in stream {
        let m = m.map_err(|e| corrupt(file, e))?;
        let topic = match index.get(&m.channel.id) {
            Some(&t) => t,
            None => {
                let type_name = m.channel.schema.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                let t =
                    bag.intern(Topic { name: m.channel.topic.clone(), type_name, encoding: m.channel.message_encoding.clone() }, file)?;
                index.insert(m.channel.id, t);
                t
            }
        };
        bag.messages.push(BagMessage { topic, log_time: m.log_time, data: m.data.into_owned() });
    }
    Ok(())
}

fn corrupt(file: &Path, e: mcap::McapError) -> BagError {
    BagError::Corrupt { file: file.to_path_buf(), message: format!("MCAP: {e}") }
}
