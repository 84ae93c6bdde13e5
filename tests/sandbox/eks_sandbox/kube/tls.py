# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A throw-away certificate authority and server certificate for 127.0.0.1, generated per sandbox."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ServerCertificate:
    ca_pem: str
    cert_path: str
    key_path: str
    ca_path: str


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate(state_dir: str) -> ServerCertificate:
    """Write ca.crt, apiserver.crt and apiserver.key into `state_dir` (the key readable by the owner only)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    start = now - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(_name("eks-sandbox-ca")).issuer_name(_name("eks-sandbox-ca"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("kube-apiserver")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(now + VALIDITY)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.DNSName("kubernetes"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    os.makedirs(state_dir, exist_ok=True)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode()
    paths = {name: os.path.join(state_dir, name) for name in ("ca.crt", "apiserver.crt", "apiserver.key")}
    with open(paths["ca.crt"], "w", encoding="ascii") as handle:
        handle.write(ca_pem)
    with open(paths["apiserver.crt"], "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(paths["apiserver.key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return ServerCertificate(ca_pem, paths["apiserver.crt"], paths["apiserver.key"], paths["ca.crt"])
