//! The export's one way to a server besides InfluxDB (whose client, shared with the
//! recorder's forwarding, is the `tc-profile-influx` crate): an upstream statsd over UDP.

use std::net::{ToSocketAddrs, UdpSocket};
pub use tc_profile_influx::WriteError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    #[error(transparent)]
    Influx(#[from] WriteError),
    #[error("cannot send to statsd at {address}: {source}")]
    Statsd {
        address: String,
        source: std::io::Error,
    },
}

/// Sends each packet to `address` (`HOST:PORT`) over UDP.
pub fn send_statsd(address: &str, packets: &[Vec<u8>]) -> Result<(), ExportError> {
    let error = |source| ExportError::Statsd {
        address: address.to_owned(),
        source,
    };
    let target = address
        .to_socket_addrs()
        .map_err(error)?
        .next()
        .ok_or_else(|| error(std::io::ErrorKind::NotFound.into()))?;
    let local = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(local).map_err(error)?;
    for packet in packets {
        socket.send_to(packet, target).map_err(error)?;
    }
    Ok(())
}
