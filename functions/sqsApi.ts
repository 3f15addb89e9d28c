/** What the scope enumerator uses of SQS, in a module loaded with its first run (only these, in its bundle). */
export { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
