/**
 * What discovery uses of EC2 (an account's enabled regions), in a module loaded on demand: importing the SDK
 * package itself on demand would keep every EC2 command in a function's bundle; this names the one used.
 */
export { DescribeRegionsCommand, EC2Client } from '@aws-sdk/client-ec2';
