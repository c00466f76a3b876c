/**
 * cdk-nag (v3) acknowledgments. cdk-nag 3 reads CDK's own `Validations.of(...).acknowledge`
 * records: an acknowledgment on a construct covers the CloudFormation resources under it, and
 * a finding with a detail (e.g. `AwsSolutions-IAM5[Resource::*]`) is acknowledged one by one.
 */
import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Acknowledges one cdk-nag finding on `construct` (and its children), with the reason it is deliberate. */
export function acknowledge(construct: IConstruct, id: string, reason: string): void {
  Validations.of(construct).acknowledge({ id, reason });
}
