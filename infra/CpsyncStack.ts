import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { acknowledgeFindings } from './nagAcknowledgements.ts';
import type { Construct } from 'constructs';
import { Cpsync, type CpsyncProps } from './Cpsync.ts';

export interface CpsyncStackProps extends StackProps {
  readonly cpsync: CpsyncProps;
}

/** The deployable stack: one Cpsync construct, its outputs, and the reasons for the cdk-nag findings it accepts. */
export class CpsyncStack extends Stack {
  public readonly cpsync: Cpsync;

  constructor(scope: Construct, id: string, props: CpsyncStackProps) {
    super(scope, id, props);
    this.cpsync = new Cpsync(this, 'Cpsync', props.cpsync);
    new CfnOutput(this, 'WebhookUrl', {
      value: this.cpsync.webhookUrl.url,
      description: 'Base URL of the webhook: POST /azure (Event Grid), POST /gcp (Pub/Sub push)',
    });
    new CfnOutput(this, 'EventBusName', { value: this.cpsync.eventBus.eventBusName });
    new CfnOutput(this, 'DoctorFunction', {
      value: this.cpsync.scopeWorker.functionName,
      description:
        'cpsync doctor --function <this>: checks the hub, the bus and every scope with the functions’ role',
    });
    if (this.cpsync.azureWebhookKey)
      new CfnOutput(this, 'AzureWebhookKeySecret', { value: this.cpsync.azureWebhookKey.secretArn });

    acknowledgeFindings(this.cpsync, this.cpsync.memberRoleName, this.cpsync.grantsAccess);
  }
}
