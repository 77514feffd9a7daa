//! Reading one sqlite3 `.db3` file of rosbag2 (tables `topics` and `messages`).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{Bag, BagError, BagMessage, Topic};

pub fn read(file: &Path, bag: &mut Bag) -> Result<(), BagError> {
    let err = |e: rusqlite::Error| BagError::Corrupt { file: file.to_path_buf(), message: format!("sqlite3: {e}") };
    if !file.is_file() {
        return Err(BagError::Io { file: file.to_path_buf(), source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file") });
    }
    let db = Connection::open_with_flags(file, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(err)?;
    let mut ids = std::collections::HashMap::new();
    {
        let mut st = db.prepare("SELECT id, name, type, serialization_format FROM topics ORDER BY id").map_err(err)?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?)))
            .map_err(err)?;
        for row in rows {
            let (id, name, type_name, encoding) = row.map_err(err)?;
            ids.insert(id, bag.intern(Topic { name, type_name, encoding }, file)?);
        }
    }
    let mut st = db.prepare("SELECT topic_id, timestamp, data FROM messages ORDER BY timestamp, id").map_err(err)?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))).map_err(err)?;
    for row in rows {
        let (topic_id, ts, data) = row.map_err(err)?;
        let topic = *ids.get(&topic_id).ok_or_else(|| BagError::Corrupt {
            file: file.to_path_buf(),
            message: format!("a message names topic id {topic_id}, which the topics table does not have"),
        })?;
        bag.messages.push(BagMessage { topic, log_time: ts.max(0) as u64, data });
    }
    Ok(())
}
