#!/usr/bin/env bash
# Makes the keytool stores TestKeytoolStores reads, with the JDK's keytool
# (Java 17 here): a self-signed EC key for CN=localhost in a PKCS12 and a JKS
# key store, and its certificate in a PKCS12 and a JKS trust store. Every
# store's password is "changeit". Run from this directory.
set -euo pipefail
rm -f keytool-server.p12 keytool-server.jks keytool-trust.p12 keytool-trust.jks keytool-server.crt
keytool -genkeypair -alias server -keyalg EC -groupname secp256r1 -dname "CN=localhost" \
  -ext "SAN=DNS:localhost,IP:127.0.0.1" -validity 36500 \
  -storetype PKCS12 -keystore keytool-server.p12 -storepass changeit
keytool -importkeystore -srckeystore keytool-server.p12 -srcstoretype PKCS12 -srcstorepass changeit \
  -destkeystore keytool-server.jks -deststoretype JKS -deststorepass changeit -destkeypass changeit 2>/dev/null
keytool -exportcert -alias server -keystore keytool-server.p12 -storepass changeit -rfc -file keytool-server.crt
keytool -importcert -noprompt -alias ca -file keytool-server.crt -storetype PKCS12 -keystore keytool-trust.p12 -storepass changeit
keytool -importcert -noprompt -alias ca -file keytool-server.crt -storetype JKS -keystore keytool-trust.jks -storepass changeit
rm -f keytool-server.crt
