/**
 * A real, self-signed CA certificate (EC P-256, valid for a century) for fixtures and the local
 * emulators: CA data in tests is what production CA data is — PEM certificates client-go can load.
 * Its key was not kept; nothing is ever signed with it.
 */
export const TEST_CA_PEM = `-----BEGIN CERTIFICATE-----
MIIBmTCCAT+gAwIBAgIULQIowUzQxkO9th7aETr62LivD5UwCgYIKoZIzj0EAwIw
ITEfMB0GA1UEAwwWY3BzeW5jLXRlc3QtY2x1c3Rlci1jYTAgFw0yNjExMjMxMTU4
MDNaGA8yMTI2MTAzMDExNTgwM1owITEfMB0GA1UEAwwWY3BzeW5jLXRlc3QtY2x1
c3Rlci1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABCQjc24pCDfdNcBs1Pog
BmvjA38EyMo/7BGrk6EXZj48oN2tqX+GjgCFIF0WlbPXYPnaPXzLNw5fVl/9FKmb
wYyjUzBRMB0GA1UdDgQWBBSouDuzgMDW7w/ciHbQaurfo6J62zAfBgNVHSMEGDAW
gBSouDuzgMDW7w/ciHbQaurfo6J62zAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49
BAMCA0gAMEUCIQDQC2fEmj2rMTf5ez0wi/BpInk6MvzXWfnH4rVesfrdpQIgMh0I
yKSCtimXtIPfTk3d+unbmKfXWupqqLoz+/YtK9s=
-----END CERTIFICATE-----
`;

/** TEST_CA_PEM as a provider gives it: standard base64. */
export const TEST_CA_DATA = Buffer.from(TEST_CA_PEM).toString('base64');
