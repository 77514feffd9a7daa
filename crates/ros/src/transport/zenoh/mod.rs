//! The Zenoh transport: one Zenoh session, data in the rmw_zenoh format (keys with type names and
//! RIHS01 hashes, the 33-byte attachment on every sample, liveliness tokens for the node and each
//! publisher and subscription) or in the zenoh-bridge-ros2dds format (plain keys, plain CDR).

pub mod attachment;
pub mod keys;
mod links;
pub mod refused;
pub mod settings;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ::zenoh::liveliness::LivelinessToken;
use ::zenoh::qos::CongestionControl;
use ::zenoh::query::{Query, Queryable};
use ::zenoh::{Session, Wait};

pub use keys::KeyFormat;
pub use settings::{ZenohConfig, ZenohMode};

use super::{AttachmentStatus, Call, CallHandler, Publisher, Sample, SampleHandler, Subscription, TopicSpec, Transport, TransportError};
use keys::{EntityKind, NodeIdentity};

fn zerr(e: impl std::fmt::Display) -> TransportError {
    TransportError::Zenoh(e.to_string())
}

/// ROS 2 topics and services over a Zenoh session (rmw_zenoh's key format, or zenoh-bridge-ros2dds's).
pub struct ZenohTransport {
    /// First, so that it stops watching before the session goes.
    links: links::LinkWatch,
    session: Session,
    config: ZenohConfig,
    identity: NodeIdentity,
    next_entity: AtomicU64,
    tokens: Vec<LivelinessToken>,
    queryables: Vec<Queryable<()>>,
}

impl ZenohTransport {
    /// Open the session and, in the rmw format, declare the node's liveliness token.
    pub fn open(config: &ZenohConfig, domain: u32, namespace: &str, node: &str) -> Result<ZenohTransport, TransportError> {
        let session = ::zenoh::open(config.session_config()?).wait().map_err(zerr)?;
        if config.max_message_size > 0 {
            tracing::info!("zenoh: a message larger than {} bytes is dropped before it is reassembled", config.max_message_size);
        }
        let identity =
            NodeIdentity { domain, zid: session.zid().to_string(), node_id: 0, namespace: namespace.to_string(), name: node.to_string() };
        let links = links::LinkWatch::start(session.clone(), config.connect.clone());
        let mut t = ZenohTransport {
            session,
            config: config.clone(),
            identity,
            next_entity: AtomicU64::new(1),
            tokens: vec![],
            queryables: vec![],
            links,
        };
        if config.format == KeyFormat::Rmw {
            let key = t.identity.node_token();
            t.declare_token(&key)?;
        }
        Ok(t)
    }

    /// The Zenoh session (for queryables and tests).
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn declare_token(&mut self, key: &str) -> Result<(), TransportError> {
        tracing::debug!("liveliness token {key}");
        let token = self.session.liveliness().declare_token(key.to_string()).wait().map_err(zerr)?;
        self.tokens.push(token);
        Ok(())
    }

    /// Declare the entity's liveliness token (rmw format) and return its GID.
    fn announce(&mut self, kind: EntityKind, topic: &TopicSpec) -> Result<[u8; 16], TransportError> {
        let (gid, token) = self.entity(kind, topic)?;
        self.tokens.extend(token);
        Ok(gid)
    }

    /// The entity's GID and its liveliness token (rmw format), which ends it when dropped.
    fn entity(&mut self, kind: EntityKind, topic: &TopicSpec) -> Result<([u8; 16], Option<LivelinessToken>), TransportError> {
        let id = self.next_entity.fetch_add(1, Ordering::Relaxed);
        let key = self.identity.entity_token(id, kind, topic);
        let token = match self.config.format {
            KeyFormat::Rmw => {
                tracing::debug!("liveliness token {key}");
                Some(self.session.liveliness().declare_token(key.clone()).wait().map_err(zerr)?)
            }
            KeyFormat::Ros2dds => None,
        };
        Ok((attachment::gid(&key), token))
    }
}

struct ZenohPublisher {
    publisher: ::zenoh::pubsub::Publisher<'static>,
    format: KeyFormat,
    gid: [u8; 16],
    seq: i64,
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

impl Publisher for ZenohPublisher {
    fn publish(&mut self, cdr: &[u8]) -> Result<(), TransportError> {
        self.seq += 1;
        let put = self.publisher.put(cdr.to_vec());
        match self.format {
            KeyFormat::Rmw => put.attachment(attachment::encode(self.seq, now_ns(), &self.gid).to_vec()).wait(),
            KeyFormat::Ros2dds => put.wait(),
        }
        .map_err(zerr)
    }
}

impl Transport for ZenohTransport {
    fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "zenoh {:?} session {} ({:?} format, domain {}), connect {:?}, listen {:?}, multicast scouting off",
            c.mode, self.identity.zid, c.format, self.identity.domain, c.connect, c.listen
        )
    }

    fn publisher(&mut self, topic: &TopicSpec) -> Result<Box<dyn Publisher>, TransportError> {
        let gid = self.announce(EntityKind::Publisher, topic)?;
        let key = keys::data_key(self.config.format, self.identity.domain, topic);
        let publisher = self
            .session
            .declare_publisher(key.clone())
            .congestion_control(CongestionControl::Drop)
            // a command is small and late is useless: sent at once, never held for batching
            .express(true)
            .wait()
            .map_err(|e| TransportError::Topic { topic: topic.name.clone(), message: format!("key {key}: {e}") })?;
        tracing::debug!("publishing {} on {key}", topic.name);
        Ok(Box::new(ZenohPublisher { publisher, format: self.config.format, gid, seq: 0 }))
    }

    /// A queryable on the service's key. rmw_zenoh's clients send the request with the 33-byte
    /// attachment (their sequence number and GID), and match the reply by the same two, which the
    /// reply's attachment carries back with the time of the answer. zenoh-bridge-ros2dds routes a
    /// DDS client's calls as queries on the plain service name, CDR both ways.
    fn serve(&mut self, service: &TopicSpec, handler: CallHandler) -> Result<(), TransportError> {
        self.announce(EntityKind::Service, service)?;
        let key = keys::data_key(self.config.format, self.identity.domain, service);
        let (format, name, reply_key) = (self.config.format, service.name.clone(), key.clone());
        let queryable = self
            .session
            .declare_queryable(key.clone())
            .complete(true)
            .callback(move |q: Query| {
                let request = q.payload().map(|p| p.to_bytes().into_owned()).unwrap_or_default();
                let client = match attachment::decode(q.attachment().map(|a| a.to_bytes()).as_deref()) {
                    AttachmentStatus::Valid { seq, gid, .. } => Some((seq, gid)),
                    _ if format == KeyFormat::Rmw => {
                        tracing::debug!("{name}: a call without an rmw_zenoh attachment; answered without one");
                        None
                    }
                    _ => None,
                };
                let (name, key) = (name.clone(), reply_key.clone());
                let reply = move |response: Vec<u8>| {
                    let r = q.reply(key, response);
                    let sent = match client {
                        Some((seq, gid)) => r.attachment(attachment::encode(seq, now_ns(), &gid).to_vec()).wait(),
                        None => r.wait(),
                    };
                    if let Err(e) = sent {
                        tracing::warn!("{name}: cannot send the answer: {e}");
                    }
                };
                handler(Call { request, reply: Box::new(reply) });
            })
            .wait()
            .map_err(|e| TransportError::Topic { topic: service.name.clone(), message: format!("key {key}: {e}") })?;
        tracing::debug!("serving {} on {key}", service.name);
        self.queryables.push(queryable);
        Ok(())
    }

    fn link_losses(&self) -> Option<u64> {
        Some(self.links.losses())
    }

    fn subscribe(&mut self, topic: &TopicSpec, handler: SampleHandler) -> Result<Subscription, TransportError> {
        let (_, token) = self.entity(EntityKind::Subscription, topic)?;
        let key = keys::subscription_key(self.config.format, self.identity.domain, topic);
        let name: Arc<str> = topic.name.as_str().into();
        let format = self.config.format;
        let subscriber = self
            .session
            .declare_subscriber(key.clone())
            .callback(move |s: ::zenoh::sample::Sample| {
                let attachment = match format {
                    KeyFormat::Rmw => attachment::decode(s.attachment().map(|a| a.to_bytes()).as_deref()),
                    KeyFormat::Ros2dds => AttachmentStatus::NotExpected,
                };
                handler(Sample { topic: name.clone(), payload: s.payload().to_bytes().into_owned(), attachment, received: Instant::now() });
            })
            .wait()
            .map_err(|e| TransportError::Topic { topic: topic.name.clone(), message: format!("key {key}: {e}") })?;
        tracing::debug!("subscribed to {} on {key}", topic.name);
        Ok(Subscription::new((subscriber, token)))
    }
}
