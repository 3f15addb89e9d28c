/** What following clusters uses of SQS and DynamoDB, in a module loaded when a cluster is first seen in change. */
export { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
export { DynamoDBClient } from '@aws-sdk/client-dynamodb';
export {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
