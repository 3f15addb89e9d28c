"""Makes an EKS bearer token the way `aws eks get-token` does (botocore's presigner), at a fixed time.

Usage: eks_token.py <cluster> <region> <access-key> <secret-key> <epoch-seconds>
Prints the token. The tests compare it with cpsync's in-process token.
"""
import base64
import datetime
import sys

import botocore.auth
import botocore.session
from botocore.signers import RequestSigner

cluster, region, access_key, secret_key, epoch = sys.argv[1:6]
moment = datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).replace(tzinfo=None)
botocore.auth.get_current_datetime = lambda: moment

session = botocore.session.Session()
session.set_credentials(access_key, secret_key)
client = session.create_client("sts", region_name=region)
signer = RequestSigner(client.meta.service_model.service_id, region, "sts", "v4", session.get_credentials(), session.get_component("event_emitter"))
url = signer.generate_presigned_url(
    {
        "method": "GET",
        "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {"x-k8s-aws-id": cluster},
        "context": {},
    },
    region_name=region,
    expires_in=60,
    operation_name="",
)
print("k8s-aws-v1." + base64.urlsafe_b64encode(url.encode("utf-8")).decode("utf-8").rstrip("="))
