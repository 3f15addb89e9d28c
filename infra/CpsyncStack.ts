import { CfnOutput, Fn, Lazy, Stack, type StackProps } from 'aws-cdk-lib';
import { acknowledgeFindings } from './nagAcknowledgements.ts';
import type { Construct } from 'constructs';
import { Cpsync, type CpsyncProps } from './Cpsync.ts';
import { configuredSubscribers, type ArgoCdClusterSync, type ChatNotifier } from './subscribers.ts';

export interface CpsyncStackProps extends StackProps {
  readonly cpsync: CpsyncProps;
}

/**
 * The deployable stack: one Cpsync construct, the example subscribers its configuration asks for
 * (`subscribers`), its outputs, and the reasons for the cdk-nag findings it accepts.
 */
export class CpsyncStack extends Stack {
  public readonly cpsync: Cpsync;
  /** The chat notifier, when the configuration's `subscribers.chat` asks for it. */
  public readonly chatNotifier?: ChatNotifier;
  /** The Argo CD subscriber, when the configuration's `subscribers.argocd` asks for it. */
  public readonly argoCdClusterSync?: ArgoCdClusterSync;

  constructor(scope: Construct, id: string, props: CpsyncStackProps) {
    super(scope, id, props);
    this.cpsync = new Cpsync(this, 'Cpsync', props.cpsync);
    const subscribers = configuredSubscribers(this, this.cpsync);
    if (subscribers.chat) this.chatNotifier = subscribers.chat;
    if (subscribers.argoCd) this.argoCdClusterSync = subscribers.argoCd;
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
    // Worked out at synthesis: subscribers' functions, made here or by the user after this, reach the hub too.
    new CfnOutput(this, 'HubRoles', {
      value: Lazy.string({ produce: () => Fn.join(' ', this.cpsync.hubRoleArns) }),
      description:
        'The role of every function that reaches the hub as cpsync, space-separated: on an EKS hub, cpsync hub install --eks-role <arn> for each',
    });
    if (this.cpsync.azureWebhookKey)
      new CfnOutput(this, 'AzureWebhookKeySecret', { value: this.cpsync.azureWebhookKey.secretArn });

    acknowledgeFindings(this.cpsync, this.cpsync.memberRoleName, this.cpsync.grantsAccess);
  }
}
