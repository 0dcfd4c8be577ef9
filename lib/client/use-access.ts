'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { accessKeys } from '@/lib/shared/query-keys'
import type { ApiTokenDto, ApiTokenListDto, CreatedApiTokenDto, CreatedUserDto, CreateTokenInput, CreateUserInput, UpdateUserInput, UserDto, UserListDto } from '@/lib/shared/schemas/user'
import { apiGet, apiSend } from './api'

export function useUsers(enabled: boolean) {
  return useQuery({ queryKey: accessKeys.users(), queryFn: ({ signal }) => apiGet<UserListDto>('/api/users', { signal }), enabled })
}

export function useCreateUser() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: Partial<CreateUserInput>) => apiSend<CreatedUserDto>('POST', '/api/users', input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.users() }),
  })
}

export function useUpdateUser() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: ({ id, input }: { id: string; input: UpdateUserInput }) => apiSend<UserDto>('PATCH', `/api/users/${encodeURIComponent(id)}`, input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.all }),
  })
}

export function useTokens() {
  return useQuery({ queryKey: accessKeys.tokens(), queryFn: ({ signal }) => apiGet<ApiTokenListDto>('/api/tokens', { signal }) })
}

export function useCreateToken() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: Partial<CreateTokenInput>) => apiSend<CreatedApiTokenDto>('POST', '/api/tokens', input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.tokens() }),
  })
}

export function useRevokeToken() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => apiSend<ApiTokenDto>('DELETE', `/api/tokens/${encodeURIComponent(id)}`),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.tokens() }),
  })
}
