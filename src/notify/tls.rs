//! https for the webhook: rustls with ring (no system library, so the portable build stays
//! portable), trusting Mozilla's roots (webpki-roots) or, with `--notify-ca FILE`, only the
//! PEM certificates given — a site's own CA, or a test's.

use std::net::TcpStream;
use std::sync::Arc;

use crate::deadline::Timed;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// The roots an https webhook is verified against.
#[derive(Debug, Clone)]
pub struct Tls(Arc<ClientConfig>);

impl Tls {
    /// Mozilla's roots, or only the certificates of `ca_pem` (PEM text); `Err` says why the
    /// PEM cannot be used.
    pub fn new(ca_pem: Option<&[u8]>) -> Result<Tls, String> {
        let mut roots = RootCertStore::empty();
        match ca_pem {
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            Some(pem) => {
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| format!("not PEM certificates: {e}"))?;
                    roots.add(cert).map_err(|e| e.to_string())?;
                }
                if roots.is_empty() {
                    return Err("no certificate in it".into());
                }
            }
        }
        let config = ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls(Arc::new(config)))
    }

    /// `tcp` as a TLS stream to `host`; the handshake happens on the first write, within the
    /// socket's deadline like every other read and write.
    pub(super) fn wrap(
        &self,
        host: &str,
        tcp: Timed<TcpStream>,
    ) -> std::io::Result<StreamOwned<ClientConnection, Timed<TcpStream>>> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| std::io::Error::other(format!("{host}: {e}")))?;
        let conn = ClientConnection::new(self.0.clone(), name).map_err(std::io::Error::other)?;
        Ok(StreamOwned::new(conn, tcp))
    }
}
