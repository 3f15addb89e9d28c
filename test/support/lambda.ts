/** Real-shaped Lambda inputs for invoking handlers in tests. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, Context, SQSRecord } from 'aws-lambda';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export function lambdaContext(functionName = 'cpsync-test'): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: `req-${Math.random().toString(36).slice(2)}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2026/01/01/[$LATEST]abc',
    getRemainingTimeInMillis: () => 60_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** A Lambda Function URL request (payload format 2.0). */
export function functionUrlRequest(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  query: Record<string, string> = {},
): APIGatewayProxyEventV2 {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: { 'content-type': 'application/json', ...headers },
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'abc123',
      domainName: 'abc123.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abc123',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'test' },
      requestId: `r-${Math.random().toString(36).slice(2)}`,
      routeKey: '$default',
      stage: '$default',
      time: '01/Jan/2026:00:00:00 +0000',
      timeEpoch: 1767225600000,
    },
    body: text,
    isBase64Encoded: false,
  };
}

/** An EventBridge event for a CloudTrail record of an EKS API call. */
export function cloudTrailEvent(
  eventName: string,
  account: string,
  region: string,
  requestParameters: Record<string, unknown>,
  id = `ct-${Math.random().toString(36).slice(2)}`,
) {
  return {
    version: '0',
    id,
    'detail-type': 'AWS API Call via CloudTrail',
    source: 'aws.eks',
    account,
    time: '2026-01-01T00:00:00Z',
    region,
    resources: [],
    detail: {
      eventVersion: '1.09',
      userIdentity: { type: 'AssumedRole', arn: `arn:aws:sts::${account}:assumed-role/admin/someone` },
      eventTime: '2026-01-01T00:00:00Z',
      eventSource: 'eks.amazonaws.com',
      eventName,
      awsRegion: region,
      sourceIPAddress: '203.0.113.7',
      userAgent: 'aws-cli/2.0',
      requestParameters,
      responseElements: null,
      requestID: 'a1b2',
      eventID: id,
      readOnly: false,
      eventType: 'AwsApiCall',
      managementEvent: true,
      recipientAccountId: account,
    },
  };
}

/** An SQS record of the scope queue, as Lambda hands it to the worker. */
export function sqsRecord(messageId: string, body: string): SQSRecord {
  return {
    messageId,
    receiptHandle: messageId,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '0',
      SenderId: 'x',
      ApproximateFirstReceiveTimestamp: '0',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:cpsync-scopes',
    awsRegion: 'us-east-1',
  };
}

/**
 * A Cloud Audit Logs entry of a GKE API call, as a log sink routes it to Pub/Sub; with `operation`, an
 * entry of a long-running operation: the one written as it starts (`operation.first`), or with `last` the
 * one written as it ends (`operation.last`, the same operation id).
 */
export function gkeAuditEntry(
  project: string,
  methodName: string,
  resourceName: string,
  operation?: { id: string; last?: boolean },
) {
  return {
    ...(operation
      ? {
          operation: {
            id: operation.id,
            producer: 'container.googleapis.com',
            ...(operation.last ? { last: true } : { first: true }),
          },
        }
      : {}),
    protoPayload: {
      '@type': 'type.googleapis.com/google.cloud.audit.AuditLog',
      serviceName: 'container.googleapis.com',
      methodName,
      resourceName,
    },
    resource: { type: 'gke_cluster', labels: { project_id: project } },
    logName: `projects/${project}/logs/cloudaudit.googleapis.com%2Factivity`,
  };
}

/** An Event Grid event of an ARM resource write or delete, as an Azure subscription's system topic sends it. */
export function eventGridEvent(eventType: string, subject: string, id: string) {
  return {
    id,
    eventType,
    subject,
    eventTime: '2026-01-01T00:00:00Z',
    dataVersion: '2',
    data: {
      resourceUri: subject,
      operationName: 'Microsoft.ContainerService/managedClusters/write',
      status: 'Succeeded',
      subscriptionId: /^\/subscriptions\/([^/]+)/i.exec(subject)?.[1],
    },
  };
}

/**
 * An Activity Log alert's notification of an ARM operation on `resourceId`, in the common alert schema, as
 * an action group's webhook posts it (`monitoringService` "Activity Log - Administrative"; the event's
 * fields in `alertContext`, the resource in `authorization.scope` and, lower-cased, in `alertTargetIDs`).
 */
export function activityLogAlert(
  resourceId: string,
  operationName: string,
  status: 'Started' | 'Accepted' | 'Succeeded' | 'Failed' | 'Canceled',
  eventDataId: string,
  at = new Date(),
) {
  const subscription = /^\/subscriptions\/([^/]+)/i.exec(resourceId)?.[1] ?? '';
  const time = at.toISOString();
  return {
    schemaId: 'azureMonitorCommonAlertSchema',
    data: {
      essentials: {
        alertId: `/subscriptions/${subscription}/providers/Microsoft.AlertsManagement/alerts/${eventDataId}`,
        alertRule: 'cpsync-aks-operations',
        severity: 'Sev4',
        signalType: 'Activity Log',
        monitorCondition: 'Fired',
        monitoringService: 'Activity Log - Administrative',
        alertTargetIDs: [resourceId.toLowerCase()],
        configurationItems: [resourceId.split('/').at(-1)],
        originAlertId: eventDataId,
        firedDateTime: time,
        description: '',
        essentialsVersion: '1.0',
        alertContextVersion: '1.0',
      },
      alertContext: {
        authorization: { action: operationName, scope: resourceId },
        channels: 'Operation',
        claims: '{}',
        caller: 'someone@example.com',
        correlationId: `corr-${eventDataId}`,
        eventSource: 'Administrative',
        eventTimestamp: time,
        eventDataId,
        level: 'Informational',
        operationName,
        operationId: `op-${eventDataId}`,
        status,
        subStatus: '',
        submissionTimestamp: time,
      },
      customProperties: null,
    },
  };
}

/** The body of a Pub/Sub push delivery carrying `entry`. */
export function pubSubPush(entry: unknown, messageId: string) {
  return {
    message: {
      data: Buffer.from(JSON.stringify(entry)).toString('base64'),
      messageId,
      publishTime: '2026-01-01T00:00:00Z',
      attributes: {},
    },
    subscription: 'projects/acme-data/subscriptions/cpsync',
  };
}

/** Google's signer of Pub/Sub push tokens, locally: a JWKS endpoint on loopback and tokens it verifies. */
export interface GoogleSigner {
  jwksUri: string;
  /** A token for `audience` (default the signer's), as Pub/Sub signs it for the push service account. */
  sign(claims?: Record<string, unknown>, audience?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startGoogleSigner(audience: string, email: string): Promise<GoogleSigner> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'local-1', alg: 'RS256', use: 'sig' };
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    jwksUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/certs`,
    // Google's claims, each of which `claims` may change (or leave out, given as undefined).
    sign: (claims = {}, to = audience) => {
      const now = Math.floor(Date.now() / 1000);
      const payload = {
        email,
        email_verified: true,
        iss: 'https://accounts.google.com',
        aud: to,
        iat: now,
        exp: now + 300,
        ...claims,
      };
      return new SignJWT(JSON.parse(JSON.stringify(payload)) as Record<string, unknown>)
        .setProtectedHeader({ alg: 'RS256', kid: 'local-1' })
        .sign(privateKey);
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
